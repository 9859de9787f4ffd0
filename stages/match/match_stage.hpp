// The match stage: a document linked to the documents it belongs with (an invoice with its
// credit note, a copy with its original), and the clusters of related documents kept. Its work
// item is the document itself; a completed ingestion queues it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/stage.hpp"
#include "adapters/db/matching_repository.hpp"
#include "adapters/matching/matcher.hpp"
#include "adapters/storage/object_store.hpp"

namespace ingestd {

struct config;
struct stage_env;
struct queue_spec;

/// The adapters the match stage runs with.
struct match_ports {
  std::shared_ptr<matching_repository> db;
  std::shared_ptr<object_store> storage;
  std::shared_ptr<matcher> match;
};

struct match_settings {
  std::shared_ptr<ingestd::queue> queue;
  std::string queue_name = "ingestd-match";
  /// 0: worker.max_in_flight.
  int max_in_flight = 0;
  /// Deliveries after which a transient failure fails the matching (the queue's
  /// maxReceiveCount, 3), and the visibility before the next delivery by deliveries so far
  /// (5 min, 30 min).
  int max_attempts = 3;
  std::vector<std::chrono::seconds> retry_backoff{std::chrono::minutes{5},
                                                  std::chrono::minutes{30}};
  /// Candidates retrieved and shown to the matcher.
  int candidate_limit = 20;
};

std::shared_ptr<stage> make_match_stage(std::shared_ptr<const match_ports> ports,
                                        const match_settings& settings);

/// The stage's queue.
std::vector<queue_spec> match_queues(const config& cfg);

/// The stage as the configuration asks for it.
result<std::vector<std::shared_ptr<const stage>>> match_stages(stage_env& env);

} // namespace ingestd
