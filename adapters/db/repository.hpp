// The worker's database port: every read and write the pipeline's actors make on PostgreSQL, in
// the shape of seed 000's statements made fenced (DESIGN §5); intake and status have their own
// (intake_repository.hpp). Implemented by pg_repository over a pool of connection threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "messages/ingestion.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// An ingestion the sweeper sends to its queue again: its size class's queue, at its priority.
struct stranded_ingestion {
  uuid id;
  /// "small" or "large" (migration 011).
  std::string size_class = "small";
  /// 0..100, lower first (migration 010).
  int32_t priority = 50;
};

struct claim_request {
  uuid ingestion_id;
  /// A fresh token the claimer generated; the claim stores it.
  uuid claim_token;
  /// Attempts after which a crash fails the ingestion as poison (worker.max_retry_attempts).
  int32_t max_attempts = 3;
  /// Size classes (seed 004): a crash taken over moves a small ingestion to the large class,
  /// keeping its attempt count (so the poison bound above still holds).
  bool crash_escalates = false;
};

struct completion {
  lease_ref ref;
  completion_record record;
};

/// The answer for a group of items: the first item's error, or success when every item succeeded.
inline result<void> all_stored(const std::vector<result<void>>& answers) {
  for (auto& a : answers)
    if (!a)
      return a;
  return {};
}

/// True when the database could not be reached or went away during the call (connection loss,
/// a server shutting down or starting up): the system's own failure, never the document's.
inline bool database_unavailable(const error& err) {
  return err.code == "pg.connection" || err.code.rfind("pg.08", 0) == 0 || err.code == "pg.57P01"
         || err.code == "pg.57P02" || err.code == "pg.57P03";
}

/// Asynchronous: every call returns at once and calls its callback exactly once, from a
/// database thread. Connection problems are transient errors (code "pg.<SQLSTATE>" or
/// "pg.connection"); a fenced write that matches no row is an error of class claim_lost.
class repository {
public:
  virtual ~repository() = default;

  /// Claims ingestions in one statement: each succeeds when the ingestion is `in-progress` and
  /// unclaimed or its lease has expired. A success sets claim_token, claimed_by, started_at,
  /// lease_expires_at = now() + lease, and returns the ingestion joined with its document;
  /// nullopt means not claimable (claimed by a live worker, finished, or unknown id).
  /// A lease that expired with its token still set was a crash (every deliberate end clears the
  /// token): it counts as an attempt, and the crash that reaches the request's max_attempts fails
  /// the ingestion with error class `poison` instead of claiming it: the answer is then the
  /// ingestion with `poisoned` set (not claimed), for the caller to notify the failure; a later
  /// claim of it answers nullopt (it is finished).
  /// Every in-progress ingestion asked for records that its message was seen. A crash taken over
  /// on a request with crash_escalates moves a small ingestion to the large class (size_class).
  virtual void claim(std::vector<claim_request> requests, std::string worker_id,
                     std::chrono::seconds lease,
                     callback<std::vector<std::optional<claimed_ingestion>>> done) = 0;

  /// The current state of each ingestion (same order as `ids`). The job asks when its claim did
  /// not succeed, to tell a duplicate of a finished ingestion (delete the message) from one that
  /// another worker is processing right now (leave the message alone).
  virtual void states(std::vector<uuid> ids, callback<std::vector<ingestion_state>> done) = 0;

  /// Seed 000 step 7: transcription_file_path, preprocessed_file_path, quality score.
  virtual void record_transcription(lease_ref ref, transcription_record record,
                                    callback<void> done) = 0;

  /// Seed 000 step 10, for several ingestions in one round trip: status completed,
  /// completed_at, claim cleared. One result per completion (claim_lost where fenced out).
  virtual void complete(std::vector<completion> completions,
                        callback<std::vector<result<void>>> done) = 0;

  /// Seed 000's failure update: attempt_count + 1; `failed` at max attempts or at once for a
  /// permanent error; last_error and error_class recorded; the claim is cleared so the next
  /// delivery can claim at once; due_at = now() + retry_delay while it stays in progress.
  /// With record.escalate the ingestion moves to the large class and stays in progress.
  virtual void record_failure(lease_ref ref, failure_record record,
                              std::chrono::seconds retry_delay,
                              callback<failure_outcome> done) = 0;

  /// Extends leases in one statement; answers the refs whose claim was lost.
  virtual void renew_leases(std::vector<lease_ref> refs, std::chrono::seconds lease,
                            callback<std::vector<lease_ref>> done) = 0;

  /// Gives a claim up without recording an attempt (shutdown, drain, work never started): the
  /// cleared token records the give-back, so the expiry of nothing is taken for a crash, and
  /// another worker may claim at once.
  virtual void release(lease_ref ref, callback<void> done) = 0;

  /// Of these ingestions, those still in progress with a cancel request (ingestd cancel while
  /// they ran), in one statement; the heartbeat asks for its claims at each tick.
  virtual void cancel_requests(std::vector<uuid> ids, callback<std::vector<uuid>> done) = 0;

  /// Fenced: the claimed ingestion becomes `cancelled` (final; completed_at set, claim cleared).
  virtual void record_cancelled(lease_ref ref, callback<void> done) = 0;

  /// Appends audit events in one statement.
  virtual void append_events(std::vector<audit_event> events, callback<void> done) = 0;

  /// append_events with an answer per event, for a caller that puts several callers' events in
  /// one call (batching_repository): an event that fails, fails alone. By default every event
  /// gets the answer of append_events.
  virtual void append_events_each(std::vector<audit_event> events,
                                  callback<std::vector<result<void>>> done) {
    auto n = events.size();
    append_events(std::move(events), [n, done = std::move(done)](result<void> r) {
      done(std::vector<result<void>>(n, r));
    });
  }

  /// The sweeper's net: under a cluster-wide advisory lock, finds `in-progress` ingestions that
  /// nobody holds (no live lease), that were due more than `stale_threshold` ago, whose message
  /// was last seen more than `stale_threshold` ago and that no message of the Postgres queue
  /// names; marks them due and seen now and returns them (id, size class, priority) for
  /// re-enqueueing. Empty when another node holds the lock. The caller makes `stale_threshold`
  /// longer than any invisibility the queue gives a message.
  virtual void rescue_stranded(std::chrono::seconds stale_threshold, int limit,
                               callback<std::vector<stranded_ingestion>> done) = 0;
};

} // namespace ingestd
