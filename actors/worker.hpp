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
#include <map>
#include <memory>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/cpu_pool.hpp"
#include "actors/relay.hpp"
#include "actors/worker_context.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

struct worker_handles {
  shutdown_actor coordinator;
  /// One per stage, in the order of worker_context::stages.
  std::vector<poller_actor> pollers;
  std::vector<heartbeat_actor> heartbeats;
  sweeper_actor sweeper;
  /// Null when the worker has no outbox to relay.
  relay_actor relay;
};

struct worker_options {
  /// Run the sweeper on this node (it elects itself per sweep with an advisory lock).
  bool sweeper = true;
  /// Stopped together with the worker (may be null).
  cpu_pool_actor cpu_pool;
  /// Called once the worker has drained and stopped everything.
  std::function<void()> on_stopped;
  /// The outbox whose rows a relay sends to `destinations` (queues by name); none when null.
  std::shared_ptr<outbox_repository> outbox;
  std::map<std::string, std::shared_ptr<queue>> destinations;
  /// The status event sinks the relay delivers to, by outbox destination.
  std::map<std::string, std::shared_ptr<event_sink>> sinks;
  relay_settings relay;
  /// Called once, from an actor, when the node decides to drain itself (worker.lifetime_units,
  /// worker.exit_after_idle_polls), before the coordinator starts the drain.
  std::function<void(const std::string& why)> on_self_drain;
};

/// The scheduler settings `ingestd run` uses, for a caller's config before its actor_system
/// starts: one scheduler thread per core (the blocking and CPU work has threads of its own, so
/// actors only coordinate), and work sharing: idle threads wait on a condition variable instead of
/// polling with short sleeps as CAF's default work stealing does, which on a few cores costs the
/// database and OCR about a tenth of the worker's CPU (bench/orchestration: 325 vs 365 us per
/// ingestion).
void configure_scheduler(caf::actor_system_config& cfg);

/// Spawns the heartbeat actors, a poller per stage (each starts polling at once; no stages in
/// the context: the ingest stage over its ports), the sweeper, the outbox relay (when there is an
/// outbox) and the shutdown coordinator.
worker_handles start_worker(caf::actor_system& sys, const std::shared_ptr<worker_context>& ctx,
                            worker_options options = {});

} // namespace ingestd
