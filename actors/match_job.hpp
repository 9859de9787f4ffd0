// The match stage (seed 003): links a document to the documents it belongs with and keeps the
// clusters of related documents.
#pragma once

#include <memory>

#include "actors/stage.hpp"
#include "actors/worker_context.hpp"

namespace ingestd {

struct match_stage_settings {
  std::shared_ptr<ingestd::queue> queue;
  std::string queue_name = "ingestd-match";
  /// 0: worker.max_in_flight.
  int max_in_flight = 0;
  /// Deliveries after which a transient failure fails the matching (seed 003: 3, the queue's
  /// maxReceiveCount), and the visibility before the next delivery by deliveries so far (seed
  /// 003: 5 min, 30 min).
  int max_attempts = 3;
  std::vector<std::chrono::seconds> retry_backoff{std::chrono::minutes{5}, std::chrono::minutes{30}};
  /// Candidates retrieved and shown to the matcher.
  int candidate_limit = 20;
};

/// The match stage over the context's ports (matching, match, storage).
std::shared_ptr<stage> make_match_stage(const worker_context& ctx, match_stage_settings settings);

} // namespace ingestd
