// A repository decorator that coalesces the pipeline's per-job writes across jobs: claim, complete
// and append_events calls that arrive while a statement of their kind runs go to the wrapped
// repository together as the next one, and the results are split back to every caller. No timer:
// under load batches form during each round trip; when idle, a call goes at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "adapters/db/repository.hpp"

namespace ingestd {

struct batching_options {
  /// Items (claims, completions, events) per statement at most; more wait for the next one.
  size_t max_batch = 500;
};

/// Wraps `inner`: claim, complete and append_events are batched; every other call goes straight
/// through. Each caller's callback is called exactly once, from the wrapped repository's thread (or
/// the caller's, when the wrapped repository answers inline). Thread-safe. The destructor waits
/// until the statements running and the calls waiting behind them are answered.
class batching_repository : public repository {
public:
  explicit batching_repository(std::shared_ptr<repository> inner, batching_options opts = {});
  ~batching_repository() override;
  batching_repository(const batching_repository&) = delete;
  batching_repository& operator=(const batching_repository&) = delete;

  void claim(std::vector<claim_request> requests, std::string worker_id, std::chrono::seconds lease,
             callback<std::vector<std::optional<claimed_ingestion>>> done) override;
  void states(std::vector<uuid> ids, callback<std::vector<ingestion_state>> done) override;
  void record_transcription(lease_ref ref, transcription_record record, callback<void> done) override;
  void complete(std::vector<completion> completions, callback<std::vector<result<void>>> done) override;
  void record_failure(lease_ref ref, failure_record record, std::chrono::seconds retry_delay,
                      callback<failure_outcome> done) override;
  void renew_leases(std::vector<lease_ref> refs, std::chrono::seconds lease,
                    callback<std::vector<lease_ref>> done) override;
  void release(lease_ref ref, callback<void> done) override;
  void cancel_requests(std::vector<uuid> ids, callback<std::vector<uuid>> done) override;
  void record_cancelled(lease_ref ref, callback<void> done) override;
  void append_events(std::vector<audit_event> events, callback<void> done) override;
  void rescue_stranded(std::chrono::seconds stale_threshold, int limit,
                       callback<std::vector<stranded_ingestion>> done) override;

  /// Calls made to the wrapped repository for each batched operation, and calls received
  /// (for tests and benchmarks).
  struct counters {
    uint64_t claim_calls_in = 0, claim_calls_out = 0;
    uint64_t complete_calls_in = 0, complete_calls_out = 0;
    uint64_t event_calls_in = 0, event_calls_out = 0;
  };
  counters stats() const;

private:
  struct impl;
  std::shared_ptr<repository> inner_;
  std::unique_ptr<impl> impl_;
};

} // namespace ingestd
