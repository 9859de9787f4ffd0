// The claimed-work port: every stage's claim, lease renewal, give-back, fenced completion,
// failure, crash counting and rescue, on one table (work_item), written once. A stage's own
// reads and writes are its own port's (ingest_repository.hpp, matching_repository.hpp,
// container_repository.hpp); the final one of them finishes the item in the same transaction.
// Implemented by pg_work_repository over a pool of connection threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "messages/result.hpp"
#include "messages/uuid.hpp"
#include "messages/work.hpp"

namespace ingestd {

/// The sweeper's net over one stage's items (one size class of it).
struct revive_request {
  std::string stage;
  /// Empty: every class.
  std::string size_class;
  /// Where their messages go.
  std::string queue;
  /// Items nobody holds, due and whose message was not seen for this long, are sent again.
  std::chrono::seconds stale_after{0};
  int limit = 500;
};

/// Asynchronous: every call returns at once and calls its callback exactly once, from a
/// database thread. Connection problems are transient errors ("pg.<SQLSTATE>", "pg.connection");
/// a fenced write that matches no row is an error of class claim_lost.
class work_repository {
public:
  virtual ~work_repository() = default;

  /// Claims in one statement, an answer per request in its order. An item is claimed when it is
  /// in progress, of the request's stage and class, and unclaimed or its lease has run out; the
  /// claim stores the token, the worker and the lease (now + `lease`). A lease that ran out with
  /// its token set was a crash: it counts as an attempt, and the crash that reaches the
  /// request's max_attempts fails the item as poison; with crash_move it moves the item to that
  /// class and sends its message there instead. A known file (skip_known_files) ends skipped.
  /// Every item asked for records that its message was seen. Audit rows record crashes, poison,
  /// known files and moves.
  virtual void claim(std::vector<claim_request> requests, std::string worker_id,
                     std::chrono::seconds lease, callback<std::vector<claim_answer>> done)
      = 0;

  /// Extends leases in one statement (and records that their messages were seen); answers the
  /// refs whose claim was lost.
  virtual void renew_leases(std::vector<claim_ref> refs, std::chrono::seconds lease,
                            callback<std::vector<claim_ref>> done)
      = 0;

  /// Of these items, those still in progress with a cancel request.
  virtual void cancel_requests(std::vector<uuid> items, callback<std::vector<uuid>> done) = 0;

  /// Completes items whose stage stores nothing of its own at the end: a result per outcome
  /// (claim_lost where fenced out). Stages with their own final write finish the item in its
  /// transaction instead (their port's completion takes the work_outcome).
  virtual void complete(std::vector<work_outcome> outcomes,
                        callback<std::vector<result<void>>> done)
      = 0;

  /// A failed attempt, fenced, with the audit trail so far: attempt_count + 1; `failed` at max
  /// attempts or at once for a permanent error (unless it moves); last_error and error_class
  /// recorded; the claim cleared; due again after `retry_delay` while it stays in progress.
  virtual void record_failure(claim_ref ref, failure_record record,
                              std::chrono::seconds retry_delay, std::vector<audit_event> audit,
                              callback<failure_outcome> done)
      = 0;

  /// Gives a claim up without counting an attempt (shutdown, a database that went away, no
  /// CPU worker in time, a tenant's spent budget): the claim cleared, due after `delay` (when its
  /// message is visible again), with the audit trail so far.
  virtual void release(claim_ref ref, std::chrono::seconds delay, std::vector<audit_event> audit,
                       callback<void> done)
      = 0;

  /// Cancelled while it ran: final status `cancelled`, fenced, with the audit trail so far.
  virtual void record_cancelled(claim_ref ref, std::vector<audit_event> audit, callback<void> done)
      = 0;

  /// Audit rows of a job that ended without a state change to carry them (its claim lost, the
  /// database gone), in one statement. A row PostgreSQL refuses fails alone.
  virtual void append_audit(std::vector<audit_event> events, callback<void> done) = 0;

  /// The sweeper's net, one node of the cluster at a time (an advisory lock; another node's
  /// sweep makes this one answer 0): items of the stage and class in progress that nobody holds
  /// (no live lease), due longer ago than stale_after, whose message was last seen longer ago
  /// than that and that no message of the Postgres queue `queue` names (a dead letter does not
  /// count: no worker receives it), get a new message on `queue` in the same transaction.
  /// Answers how many.
  virtual void revive(revive_request request, callback<int64_t> done) = 0;
};

} // namespace ingestd
