// The claimed-work port over PostgreSQL: the statements of work_repository.hpp, batched with
// unnest so that a batch is one round trip, on a small pool of connection threads.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/work_repository.hpp"
#include "adapters/support/coalescing_queue.hpp"

namespace ingestd {

struct pg_work_options {
  /// Connection threads (each owns one connection).
  int pool_size = 2;
  /// The deadlines of every statement.
  pg::session_options session = {};
  /// Messages of hand-offs: outbox rows the relay sends (SQS), or rows of the Postgres queue.
  bool via_outbox = false;
  /// Claims per statement at most; more wait for the next one.
  size_t max_batch = 500;
};

/// Callbacks run on the pool's threads. Claims that arrive while a claim statement runs go
/// together in the next one (adapters/support/coalescing_queue.hpp): under load a batch forms
/// during each round trip; when idle, a claim goes at once. Destroying the repository runs the
/// calls already made, then closes the connections.
class pg_work_repository final : public work_repository {
public:
  explicit pg_work_repository(std::string database_url, const pg_work_options& opts = {});
  ~pg_work_repository() override;

  void claim(std::vector<claim_request> requests, std::string worker_id, std::chrono::seconds lease,
             callback<std::vector<claim_answer>> done) override;
  void renew_leases(std::vector<claim_ref> refs, std::chrono::seconds lease,
                    callback<std::vector<claim_ref>> done) override;
  void cancel_requests(std::vector<uuid> items, callback<std::vector<uuid>> done) override;
  void complete(std::vector<work_outcome> outcomes,
                callback<std::vector<result<void>>> done) override;
  void record_failure(claim_ref ref, failure_record record, std::chrono::seconds retry_delay,
                      std::vector<audit_event> audit, callback<failure_outcome> done) override;
  void release(claim_ref ref, std::chrono::seconds delay, std::vector<audit_event> audit,
               callback<void> done) override;
  void record_cancelled(claim_ref ref, std::vector<audit_event> audit,
                        callback<void> done) override;
  void append_audit(std::vector<audit_event> events, callback<void> done) override;
  void revive(revive_request request, callback<int64_t> done) override;

  /// Claim statements sent (fewer than claim calls under load), for tests and benches.
  uint64_t claim_statements() const;

private:
  struct pending_claim {
    std::vector<claim_request> requests;
    std::string worker_id;
    std::chrono::seconds lease;
    callback<std::vector<claim_answer>> done;
  };
  struct claim_queue {
    coalescing_queue<pending_claim> waiting;
    std::atomic<uint64_t> statements{0};
  };
  void claim_batches(pg::connection& conn, std::vector<pending_claim>& batch);

  bool via_outbox_;
  size_t max_batch_;
  std::unique_ptr<claim_queue> claims_ = std::make_unique<claim_queue>();
  std::unique_ptr<pg::pool> pool_;
};

} // namespace ingestd
