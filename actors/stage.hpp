// A stage of the pipeline: a queue, a poller and a kind of job. Every stage's jobs run the same
// lifecycle (actors/job.cpp: the fenced claim of a work item, the heartbeat, step deadlines,
// failure with back-off, give-back at shutdown, cancellation). A stage module (stages/<name>/)
// supplies the rest: its ports, its steps between the claim and the outcome, its CPU policy, its
// failure hook and its next stages, and a factory that builds it from the configuration
// (stages/registry.cpp lists the factories by name).
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
#include "messages/work.hpp"

namespace ingestd {

class job_handle;

/// The stage's part of one job: made for each queue message whose claim was granted, owned by
/// its job actor, called only inside it.
class stage_job {
public:
  virtual ~stage_job() = default;

  /// The steps from the granted claim (job.claim()) to the outcome, each a job.request() or a
  /// job.on_cpu(). The last stores the outcome: job.storing_outcome(), then the stage's own final
  /// write with job.outcome() in its transaction (or job.complete() when the stage stores nothing
  /// of its own), then job.completed(). Any error goes to job.fail() or job.step_failed().
  virtual void run(job_handle& job) = 0;

  /// The attempt ends without its outcome: its failure (an error of the work, not of the node)
  /// or its cancellation is about to be recorded. The stage writes what it kept to store with
  /// the outcome and a reviewer needs all the same (the ingest stage's transcription) as one more
  /// step, then calls `then`, whatever that write answered. The default keeps nothing.
  virtual void save_progress(job_handle& job, std::function<void()> then) {
    (void)job;
    auto go_on = std::move(then);
    go_on();
  }
};

/// What happens to the queue message of a job that failed for good.
enum class dead_letter_policy : uint8_t {
  /// Deleted: the database holds the failure.
  never,
  /// Left for the queue's dead-letter redrive when the attempts ran out on transient errors;
  /// deleted after a permanent error.
  exhausted,
  /// Left for the redrive whatever the reason.
  always,
};

/// A failed attempt about to be recorded, for the stage's failure hook to change: the record
/// (its max_attempts, a move to another size class) and the back-off before the next attempt.
struct failure_plan {
  const claimed_work& claim;
  failure_record record;
  std::chrono::seconds delay{0};
};

/// One stage as a node runs it.
struct stage {
  /// The stage's name, as its work items carry it: "ingest", "match", "unpack".
  std::string name;
  /// The name with the size class it serves ("ingest.small"), or the name: logs, metrics.
  std::string label;
  /// The log field that names one of its work items: "ingestion_id" when the item is an
  /// ingestion, "document_id" when it is the document itself.
  std::string item_log_key = "ingestion_id";
  std::shared_ptr<ingestd::queue> queue;
  std::string queue_name;
  /// Jobs of this stage in flight at most (worker.max_in_flight caps all stages together).
  int max_in_flight = 0;
  int max_attempts = 3;
  /// Visibility before the next attempt, by attempts so far (the last entry repeats).
  std::vector<std::chrono::seconds> retry_backoff;
  dead_letter_policy dead_letter = dead_letter_policy::never;
  /// Its jobs need the CPU pool: the poller admits them by what the pool can finish.
  bool uses_cpu = false;
  /// Its jobs keep an audit trail (audit_trail, read through the view ingestion_event).
  bool audit = false;
  /// A work item whose document is a known file ends skipped at its claim.
  bool skips_known_files = false;
  /// Its work can be cancelled while it runs: the heartbeat asks for cancel requests.
  bool cancellable = false;
  /// The size class it serves (its claims refuse items of another); empty: no classes.
  std::string size_class;
  /// A crash taken over moves the item there instead of claiming it.
  std::optional<work_move> crash_move;
  /// Slots of worker.capacity_slots one job takes (0: none), and its units of
  /// worker.lifetime_units (at least 1).
  int weight = 1;
  /// The deadline of each step of its jobs (0: worker.step_timeout_seconds).
  std::chrono::seconds step_timeout{0};
  /// May change a failed attempt's record and back-off before it is recorded (e.g. a move to
  /// the large size class); empty: recorded as it is.
  std::function<void(failure_plan&)> on_failure;
  /// The stage's part of a new job.
  std::function<std::unique_ptr<stage_job>()> make_job;
};

} // namespace ingestd
