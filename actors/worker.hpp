// The whole worker inside a caf::actor_system of the caller's: the public header for embedding
// ingestd in a test harness or another program with adapters of its choosing.
//
//   auto ctx = std::make_shared<ingestd::worker_context>();
//   ctx->ports = {...};            // queue, storage, db, ocr, extract
//   ctx->observer = [](const ingestd::job_outcome& o) { ... };
//   auto w = ingestd::start_worker(sys, ctx);
//   ...                            // send messages to the queue; watch the observer
//   caf::anon_send(w.coordinator, ingestd::shutdown_atom_v);   // drains, then stops
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/cpu_pool.hpp"
#include "actors/worker_context.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

struct worker_handles {
  shutdown_actor coordinator;
  poller_actor poller;
  std::vector<heartbeat_actor> heartbeats;
  sweeper_actor sweeper;
};

struct worker_options {
  /// Run the sweeper on this node (it elects itself per sweep with an advisory lock).
  bool sweeper = true;
  /// Stopped together with the worker (may be null).
  cpu_pool_actor cpu_pool;
  /// Called once the worker has drained and stopped everything.
  std::function<void()> on_stopped;
};

/// Spawns the heartbeat actors, the poller (which starts polling at once), the sweeper and the
/// shutdown coordinator.
worker_handles start_worker(caf::actor_system& sys, std::shared_ptr<worker_context> ctx,
                            worker_options options = {});

} // namespace ingestd
