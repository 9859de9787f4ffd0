// Assembles a node from its actors.
#include "actors/node.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

#include "actors/deadlines.hpp"
#include "actors/heartbeat.hpp"
#include "actors/periodic.hpp"
#include "actors/poller.hpp"
#include "actors/shutdown.hpp"
#include "actors/sweeper.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

void configure_scheduler(caf::actor_system_config& cfg) {
  cfg.set("scheduler.max-threads",
          static_cast<size_t>(std::max(1u, std::thread::hardware_concurrency())));
  cfg.set("scheduler.policy", caf::atom("sharing"));
}

node start_node(caf::actor_system& sys, const std::shared_ptr<node_context>& ctx,
                node_options options) {
  node n;
  n.context = ctx;
  auto& s = ctx->settings;
  ctx->admission->configure(s.admission_limits());
  ctx->metrics->watch(ctx->admission);
  std::vector<caf::actor> others;
  for (int i = 0; i < std::max(s.heartbeat_actors, 1); ++i) {
    n.heartbeats.push_back(spawn_heartbeat(sys, ctx));
    others.push_back(caf::actor_cast<caf::actor>(n.heartbeats.back()));
  }
  n.deadlines = spawn_deadline_sweep(sys, ctx->deadlines);
  others.push_back(caf::actor_cast<caf::actor>(n.deadlines));
  if (options.sweeper) {
    n.sweeper = spawn_sweeper(sys, ctx);
    others.push_back(caf::actor_cast<caf::actor>(n.sweeper));
  }
  if (options.cpu_pool)
    others.push_back(caf::actor_cast<caf::actor>(options.cpu_pool));
  if (options.outbox) {
    n.relay = spawn_relay(sys, options.outbox, options.destinations, options.relay, options.sinks,
                          ctx->metrics);
    others.push_back(caf::actor_cast<caf::actor>(n.relay));
  }
  for (auto& task : options.periodic) {
    n.periodic.push_back(spawn_periodic(sys, std::move(task)));
    others.push_back(caf::actor_cast<caf::actor>(n.periodic.back()));
  }
  if (options.registry) {
    auto flags = options.drain_flags ? options.drain_flags : std::make_shared<node_drain_flags>();
    n.registry = spawn_node_registry(sys, options.registry, options.registration, ctx->metrics,
                                     ctx->admission, flags);
    others.push_back(caf::actor_cast<caf::actor>(n.registry));
  }
  std::string labels;
  for (auto& stage : ctx->stages) {
    ctx->metrics->add_stage(stage->label);
    n.pollers.push_back(spawn_poller(sys, ctx, stage, n.heartbeats));
    labels.append(labels.empty() ? "" : ",").append(stage->label);
  }
  n.coordinator
      = spawn_shutdown(sys, ctx, n.pollers, std::move(others), std::move(options.on_stopped));
  if (!ctx->request_drain) {
    // Once per node: a second shutdown request would force the jobs out. A weak address, so the
    // context does not keep the coordinator alive.
    auto asked = std::make_shared<std::atomic<bool>>(false);
    ctx->request_drain = [asked, coordinator = caf::actor_cast<caf::actor_addr>(n.coordinator),
                          hook = std::move(options.on_self_drain)](const std::string& why) {
      if (asked->exchange(true))
        return;
      if (hook)
        hook(why);
      if (auto c = caf::actor_cast<caf::actor>(coordinator))
        caf::anon_send(c, shutdown_atom_v);
    };
  }
  log::info("node started", {{"worker_id", s.worker_id},
                             {"stages", labels},
                             {"max_in_flight", s.max_in_flight},
                             {"capacity_slots", s.capacity_slots}});
  return n;
}

} // namespace ingestd
