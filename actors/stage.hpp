// A stage of the pipeline (DESIGN §8): a queue, a poller and a kind of job. Every stage's jobs run
// the same lifecycle (actors/job.cpp: claim with a fenced token, heartbeat, deadlines, failure
// with back-off, give-back at shutdown); what differs is the rows they claim and the steps
// between the claim and the outcome, which a stage_job supplies. Stages: ingest
// (actors/ingest_job.cpp), match (actors/match_job.cpp) and unpack (actors/unpack_job.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/queue/queue.hpp"
#include "messages/ingestion.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

class job_handle;
struct worker_context;

/// A granted claim, as the lifecycle needs it.
struct claimed_work {
  uuid id;
  uuid claim_token;
  /// Attempts before this one: the back-off before the next is retry_backoff[attempt_count].
  int32_t attempt_count = 0;
  /// For the job's log line.
  uuid document_id;
  /// The size class the row runs in ("small", "large"; empty for stages without classes) and
  /// the attempt count when it entered that class.
  std::string size_class;
  int32_t class_attempts_base = 0;
  /// For the job's log lines.
  uuid tenant_id;
};

/// The stage's part of one job: one object per queue message, owned by its job actor, called
/// only inside it. The database calls answer like the repository's (claim_lost when fenced out).
class stage_job {
public:
  virtual ~stage_job() = default;

  /// Claims the row the message names (`id` is the message body); nullopt: not claimable.
  virtual void claim(const uuid& id, const uuid& token, int32_t max_attempts,
                     callback<std::optional<claimed_work>> done) = 0;

  /// The state of a row the job could not claim.
  virtual void state(const uuid& id, callback<ingestion_state> done) = 0;

  /// The stage's steps between the claim and the outcome: each is a job.request(); the last
  /// stores the outcome (job.storing_outcome(), then job.completed()); any error goes to
  /// job.fail() or job.step_failed().
  virtual void run(job_handle& job) = 0;

  /// A failed attempt (back-off `delay` before the next).
  virtual void record_failure(const lease_ref& ref, failure_record record,
                              std::chrono::seconds delay, callback<failure_outcome> done) = 0;

  /// Gives the claim up without counting an attempt.
  virtual void release(const lease_ref& ref, callback<void> done) = 0;

  /// The work failed for good after `attempts`: tell the people who must know (the webhook).
  virtual void failed_for_good(const error& err, int32_t attempts) = 0;

  /// Cancelled while it ran (issue 13): records the final `cancelled` outcome, fenced like the
  /// other writes. Only the stages with stage::cancel_requests are ever asked; the others answer
  /// "cancel.unsupported" and the job gives its claim back instead.
  virtual void record_cancelled(const lease_ref& ref, callback<void> done) {
    (void) ref;
    auto answer = std::move(done);
    answer(error::make_permanent("cancel.unsupported", "this stage's work cannot be cancelled"));
  }
};

/// What happens to the queue message of a job that failed for good.
enum class dead_letter_policy : uint8_t {
  /// Deleted: the database holds the failure.
  never,
  /// Left for the queue's dead-letter redrive when the attempts ran out on transient errors
  /// (seed 003); deleted after a permanent error.
  exhausted,
  /// Left for the redrive whatever the reason.
  always,
};

/// One stage as a node runs it.
struct stage {
  /// "ingest", "match", "unpack": logs, metrics and `ingestd run --stages`.
  std::string name;
  std::shared_ptr<ingestd::queue> queue;
  /// The queue's name (the sweeper looks for its messages on the Postgres queue).
  std::string queue_name;
  /// Jobs of this stage in flight at most (worker.max_in_flight caps all stages together).
  int max_in_flight = 0;
  int max_attempts = 3;
  /// Visibility before the next attempt, by attempts so far (the last entry repeats).
  std::vector<std::chrono::seconds> retry_backoff;
  dead_letter_policy dead_letter = dead_letter_policy::never;
  /// Its jobs need the CPU pool: the poller admits them by what the pool can finish.
  bool uses_cpu = false;
  /// Its jobs write the audit trail (table ingestion_event, keyed by the message's id).
  bool audit = false;
  /// Extends the leases of this stage's claims; answers the refs whose claim was lost.
  std::function<void(std::vector<lease_ref>, std::chrono::seconds, callback<std::vector<lease_ref>>)>
    renew_leases;
  /// Of these claimed ids, those with a cancel request (the heartbeat asks at each tick and tells
  /// their jobs); empty for a stage whose work cannot be cancelled.
  std::function<void(std::vector<uuid>, callback<std::vector<uuid>>)> cancel_requests;
  /// The stage's part of a new job.
  std::function<std::unique_ptr<stage_job>(const std::shared_ptr<worker_context>&)> make_job;

  // Size classes and capacity (seed 004). The ingest stage runs once per size class a node
  // serves, each instance with its own queue, deadlines and weight; other stages have none.
  /// "small" or "large"; empty: the stage has no classes.
  std::string size_class;
  /// Slots of worker.capacity_slots one job of this stage takes (0: none), and its units of
  /// worker.lifetime_units (at least 1).
  int weight = 1;
  /// The deadline of each step of its jobs (0: worker.step_timeout_seconds).
  std::chrono::seconds step_timeout{0};
  /// The small class: the large class's queue, where the ingestions it gives up on go (a
  /// timeout, class_max_attempts failures, or a crash). Null: no escalation.
  std::shared_ptr<ingestd::queue> escalate_to;
  /// Failed attempts in the class before the small class escalates, or the large class fails
  /// for good (0: the stage has no classes; max_attempts counts).
  int class_max_attempts = 0;
};

} // namespace ingestd
