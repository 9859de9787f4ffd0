// The repository port over PostgreSQL: seed 000's statements made fenced, batched with unnest so
// that a batch is one round trip, run on a small pool of connection threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/repository.hpp"
#include "adapters/support/coalescing_queue.hpp"

namespace ingestd {

namespace pg {
class connection;
class pool;
}

/// The job that follows a completed ingestion (the matching stage), made in the completion's
/// transaction.
struct next_job_options {
  /// The next stage's queue; empty: no next job.
  std::string queue;
  /// true: an outbox row the relay sends (SQS); false: a row of the Postgres queue.
  bool via_outbox = false;
};

struct pg_repository_options {
  /// Connection threads (each owns one libpq connection).
  int pool_size = 2;
  /// The deadlines of every statement.
  pg::session_options session = {};
  next_job_options next_job = {};
};

/// Callbacks run on the pool's threads. Destroying the repository runs the calls already made,
/// then closes the connections.
class pg_repository final : public repository {
public:
  pg_repository(std::string database_url, const pg_repository_options& opts = {});
  ~pg_repository() override;

  void claim(std::vector<claim_request> requests, std::string worker_id,
             std::chrono::seconds lease,
             callback<std::vector<std::optional<claimed_ingestion>>> done) override;
  void states(std::vector<uuid> ids, callback<std::vector<ingestion_state>> done) override;
  /// Records that arrive while one statement runs go together in the next one.
  void record_transcription(lease_ref ref, transcription_record record,
                            callback<void> done) override;
  void complete(std::vector<completion> completions,
                callback<std::vector<result<void>>> done) override;
  void record_failure(lease_ref ref, failure_record record, std::chrono::seconds retry_delay,
                      callback<failure_outcome> done) override;
  void renew_leases(std::vector<lease_ref> refs, std::chrono::seconds lease,
                    callback<std::vector<lease_ref>> done) override;
  void release(lease_ref ref, callback<void> done) override;
  void cancel_requests(std::vector<uuid> ids, callback<std::vector<uuid>> done) override;
  void record_cancelled(lease_ref ref, callback<void> done) override;
  void append_events(std::vector<audit_event> events, callback<void> done) override;
  /// An event PostgreSQL refuses fails alone; the others of the statement are stored.
  void append_events_each(std::vector<audit_event> events,
                          callback<std::vector<result<void>>> done) override;
  void rescue_stranded(std::chrono::seconds stale_threshold, int limit,
                       callback<std::vector<stranded_ingestion>> done) override;

  /// UPDATE statements sent for record_transcription (fewer than calls under load).
  uint64_t transcription_statements() const;

private:
  struct pending_transcription {
    lease_ref ref;
    transcription_record record;
    callback<void> done;
  };
  struct transcription_queue {
    coalescing_queue<pending_transcription> waiting;
    std::atomic<uint64_t> statements{0};
  };
  void record_transcriptions(pg::connection& conn, std::vector<pending_transcription>& batch);

  next_job_options next_job_;
  std::unique_ptr<transcription_queue> transcriptions_ = std::make_unique<transcription_queue>();
  std::unique_ptr<pg::pool> pool_;
};

} // namespace ingestd
