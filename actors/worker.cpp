// Assembles a worker from its actors.
#include "actors/worker.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

#include "actors/heartbeat.hpp"
#include "actors/ingest_job.hpp"
#include "actors/poller.hpp"
#include "actors/shutdown.hpp"
#include "actors/sweeper.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

void configure_scheduler(caf::actor_system_config& cfg) {
  cfg.set("scheduler.max-threads", static_cast<size_t>(std::max(1u, std::thread::hardware_concurrency())));
  cfg.set("scheduler.policy", caf::atom("sharing"));
}

worker_handles start_worker(caf::actor_system& sys, const std::shared_ptr<worker_context>& ctx,
                            worker_options options) {
  worker_handles w;
  std::vector<caf::actor> others;
  for (int i = 0; i < std::max(ctx->settings.heartbeat_actors, 1); ++i) {
    w.heartbeats.push_back(spawn_heartbeat(sys, ctx));
    others.push_back(caf::actor_cast<caf::actor>(w.heartbeats.back()));
  }
  if (options.sweeper) {
    w.sweeper = spawn_sweeper(sys, ctx);
    others.push_back(caf::actor_cast<caf::actor>(w.sweeper));
  }
  if (options.cpu_pool)
    others.push_back(caf::actor_cast<caf::actor>(options.cpu_pool));
  if (options.outbox) {
    w.relay = spawn_relay(sys, options.outbox, options.destinations, options.relay, options.sinks);
    others.push_back(caf::actor_cast<caf::actor>(w.relay));
  }
  if (ctx->stages.empty())
    ctx->stages.push_back(make_ingest_stage(*ctx));
  std::string names;
  for (auto& stage : ctx->stages) {
    ctx->metrics->add_stage(stage->name);
    w.pollers.push_back(spawn_poller(sys, ctx, stage, w.heartbeats));
    names.append(names.empty() ? "" : ",").append(stage->name);
  }
  w.coordinator = spawn_shutdown(sys, ctx, w.pollers, std::move(others), std::move(options.on_stopped));
  auto& s = ctx->settings;
  ctx->metrics->capacity_slots = s.capacity_slots;
  ctx->metrics->max_in_flight = s.max_in_flight;
  if (!ctx->request_drain) {
    // Once per node: a second shutdown request would force the jobs out. A weak address, so the
    // context does not keep the coordinator alive.
    auto asked = std::make_shared<std::atomic<bool>>(false);
    ctx->request_drain = [asked, coordinator = caf::actor_cast<caf::actor_addr>(w.coordinator),
                          hook = std::move(options.on_self_drain)](const std::string& why) {
      if (asked->exchange(true))
        return;
      if (hook)
        hook(why);
      if (auto c = caf::actor_cast<caf::actor>(coordinator))
        caf::anon_send(c, shutdown_atom_v);
    };
  }
  log::info("worker started", {{"worker_id", s.worker_id},
                               {"stages", names},
                               {"queue", ctx->ports.ingest_queue ? ctx->ports.ingest_queue->name() : std::string{"none"}},
                               {"storage", ctx->ports.storage->name()},
                               {"ocr", ctx->ports.ocr->name()},
                               {"extractor", ctx->ports.extract->name()},
                               {"max_in_flight", s.max_in_flight}});
  return w;
}

} // namespace ingestd
