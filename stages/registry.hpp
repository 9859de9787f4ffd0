// The stages ingestd knows, by name, in pipeline order: for each, the queues it reads and a
// factory that builds it for a node from the configuration and what the node shares with every
// stage. `ingestd run` builds the node's stages through it, `ingestd queues create` makes their
// queues through it; the generic actors only ever see the stages it built. Adding a stage is its
// module (stages/<name>/) and one line in registry.cpp.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "actors/stage.hpp"
#include "adapters/db/pg_connection.hpp"
#include "adapters/queue/queue.hpp"
#include "adapters/storage/object_store.hpp"
#include "adapters/support/cpu_executor.hpp"
#include "config/config.hpp"
#include "messages/result.hpp"

namespace ingestd {

class provider_set;
class worker_metrics;

/// A queue a stage reads, as the configuration names it.
struct queue_spec {
  /// The stage's label: "ingest", "ingest.large" (the large size class), "match", "unpack".
  std::string stage;
  std::string name;
  /// SQS only: the URL when configured (else looked up by name).
  std::string url;
  std::string dead_letter;
  /// 0: no redrive (the dead-letter queue is still made, for a later change of mind).
  int max_receive_count = 0;
};

/// What the node shares with every stage's factory.
struct stage_env {
  const config& cfg;
  std::shared_ptr<object_store> storage;
  std::shared_ptr<cpu_executor> cpu;
  /// The providers the configuration names (transcription, extraction, matching), built once
  /// on first need with the node's HTTP engine and provider limits.
  provider_set& providers;
  /// Opens one of the configured queues (a Postgres queue that `ingestd queues create` did not
  /// make is an error naming it).
  std::function<result<std::shared_ptr<queue>>(const queue_spec&)> open_queue;
  /// The stages' own repositories: their connections and deadlines, and whether hand-offs send
  /// their messages through the outbox (SQS) or as rows of the Postgres queue.
  pg::session_options session;
  int pool_size = 2;
  bool via_outbox = false;
  /// The node's metrics, for what a stage owns and shows (null in one-document commands).
  std::shared_ptr<worker_metrics> metrics = nullptr;
};

struct registered_stage {
  std::string_view name;
  /// The stage's queues when it is enabled (each with its dead-letter queue).
  std::function<std::vector<queue_spec>(const config&)> queues;
  /// The stage's instances for a node that serves it (one per size class for ingest).
  std::function<result<std::vector<std::shared_ptr<const stage>>>(stage_env&)> make;
};

/// Every stage, in pipeline order.
const std::vector<registered_stage>& stage_registry();

/// The registered stage `name`, or null.
const registered_stage* find_stage(std::string_view name);

/// The queues of every enabled stage, in pipeline order.
std::vector<queue_spec> configured_queues(const config& cfg);

/// The stages a node serves (stages.serve, else every enabled one), built in pipeline order.
result<std::vector<std::shared_ptr<const stage>>> build_stages(stage_env& env);

} // namespace ingestd
