// The node's row in the cluster's registry (worker_node): refreshed with the heartbeat, with the
// drain request it carries handed to the node's shutdown path.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/admission.hpp"
#include "actors/metrics.hpp"
#include "adapters/db/node_repository.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

/// Shared between the registry actor and the thread that runs the node's shutdown.
struct node_drain_flags {
  /// Set by the node once it drains (a signal, or a drain request): the row shows "draining".
  std::atomic<bool> draining{false};
  /// Set by the registry actor when the row carries a drain request (`ingestd drain`); the node
  /// then starts the same shutdown as on SIGTERM.
  std::atomic<bool> drain_requested{false};
};

struct node_registry_settings {
  std::string id;
  /// The incarnation the node registered with.
  uuid incarnation;
  /// How often the row is refreshed (the heartbeat's rate).
  std::chrono::milliseconds interval{std::chrono::seconds{10}};
  /// Rows of stopped and lost nodes not seen for this long are deleted, checked every
  /// prune_interval (and once at start).
  std::chrono::seconds retention{std::chrono::hours{24}};
  std::chrono::seconds prune_interval{std::chrono::hours{1}};
};

/// Spawns the actor that refreshes the registered row of `settings.id` (jobs finished from
/// `metrics`, in flight and capacity usage from `admission`, the state from `flags`) and sets
/// flags->drain_requested when a drain is asked for. The node registers before and marks itself
/// stopped after, itself.
node_registry_actor spawn_node_registry(caf::actor_system& sys,
                                        std::shared_ptr<node_repository> nodes,
                                        node_registry_settings settings,
                                        std::shared_ptr<worker_metrics> metrics,
                                        std::shared_ptr<const node_admission> admission,
                                        std::shared_ptr<node_drain_flags> flags);

} // namespace ingestd
