// A node: every actor of one ingestd process (or of a program that embeds ingestd) built from its
// context and stages, owned by one handle. The builder spawns the heartbeats, a poller per stage,
// the sweeper, the outbox relay, the node registry's actor and the shutdown coordinator, which
// stops them all (and the CPU pool) once the pollers have drained.
//
//   auto ctx = std::make_shared<ingestd::node_context>();
//   ctx->work = ...;                 // the claimed-work port
//   ctx->stages = {make_ingest_stage(ports, settings, {})};
//   ctx->observer = [](const ingestd::job_outcome& o) { ... };
//   auto node = ingestd::start_node(sys, ctx);
//   ...                               // send messages to the stages' queues; watch the observer
//   caf::anon_send(node.coordinator, ingestd::shutdown_atom_v);   // drains, then stops
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/node_context.hpp"
#include "actors/node_registry.hpp"
#include "actors/periodic.hpp"
#include "actors/relay.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

struct node_options {
  /// Run the sweeper on this node (it elects itself per sweep with an advisory lock).
  bool sweeper = true;
  /// The node's CPU pool, stopped with it (may be null).
  cpu_pool_actor cpu_pool;
  /// The outbox whose rows a relay sends to `destinations` (queues by name) and to the status
  /// event `sinks` (by outbox destination); no relay when null.
  std::shared_ptr<outbox_repository> outbox;
  std::map<std::string, std::shared_ptr<queue>> destinations;
  std::map<std::string, std::shared_ptr<event_sink>> sinks;
  relay_settings relay;
  /// The node's row in the cluster's registry, refreshed with the heartbeat (registered before,
  /// and marked stopped after, by the caller); no registry actor when null.
  std::shared_ptr<node_repository> registry;
  /// Background work in passes, each on a periodic actor of its own (retention, mailboxes).
  std::vector<periodic_task> periodic;
  node_registry_settings registration;
  std::shared_ptr<node_drain_flags> drain_flags;
  /// Called once, from an actor, when the node decides to drain itself (worker.lifetime_units,
  /// worker.exit_after_idle_polls), before the coordinator starts the drain.
  std::function<void(const std::string& why)> on_self_drain;
  /// Called once the node has drained and stopped everything.
  std::function<void()> on_stopped;
};

/// The handle of a running node.
struct node {
  std::shared_ptr<node_context> context;
  shutdown_actor coordinator;
  /// One per stage, in the order of context->stages.
  std::vector<poller_actor> pollers;
  std::vector<heartbeat_actor> heartbeats;
  /// Tells the jobs whose step ran past its deadline.
  deadline_sweep_actor deadlines;
  /// Null when the node runs none.
  sweeper_actor sweeper;
  relay_actor relay;
  node_registry_actor registry;
  /// One per node_options::periodic task, in its order.
  std::vector<periodic_actor> periodic;
};

/// The scheduler settings `ingestd run` uses, for a caller's config before its actor_system
/// starts: one scheduler thread per core (the blocking and CPU work has threads of its own, so
/// actors only coordinate), and work sharing: idle threads wait on a condition variable instead
/// of polling with short sleeps as CAF's default work stealing does, which on a few cores costs
/// the database and OCR about a tenth of the worker's CPU.
void configure_scheduler(caf::actor_system_config& cfg);

/// Starts the node over `ctx` (its admission set to its settings' limits): the heartbeats, the
/// deadline sweep, a poller per stage (each receives at once), the sweeper, the relay and the
/// registry actor (when the options ask for them) and the shutdown coordinator.
node start_node(caf::actor_system& sys, const std::shared_ptr<node_context>& ctx,
                node_options options = {});

} // namespace ingestd
