// Builds a node from its configuration.
#include "app/node_setup.hpp"

#include <array>

#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/cpu_pool.hpp"
#include "adapters/support/blocking_call.hpp"
#include "adapters/support/log.hpp"
#include "retention/pruner.hpp"
#include "stages/registry.hpp"

namespace ingestd {

namespace {

/// The registry's writes at start wait at most this.
constexpr std::chrono::seconds registry_timeout{30};
/// What a stopped node still writes waits at most this: a database that does not answer must not
/// hold its exit.
constexpr std::chrono::seconds finish_timeout{2};

/// This process as the registry shows it.
node_registration this_node(const config& cfg, const node_context& ctx,
                            const std::string& version) {
  node_registration me;
  me.id = ctx.settings.worker_id;
  me.incarnation = uuid::v4();
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) == 0)
    me.host = host.data();
  me.pid = static_cast<int32_t>(::getpid());
  me.version = version;
  for (auto& name : served_stages(cfg))
    me.stages.append(me.stages.empty() ? "" : ",").append(name);
  for (auto& stage : ctx.stages)
    if (!stage->size_class.empty())
      me.classes.append(me.classes.empty() ? "" : ",").append(stage->size_class);
  me.capacity = ctx.settings.max_in_flight;
  me.lease = ctx.settings.lease;
  return me;
}

/// A registry that is missing is a schema not migrated yet: say so.
error registration_error(error e) {
  if (e.message.find("worker_node") != std::string::npos
      && e.message.find("does not exist") != std::string::npos)
    e.message += " (the schema predates this node: run `ingestd migrate` first)";
  e.message = "registering the node: " + e.message;
  return e;
}

/// A JSON string of `s` (worker ids and sink names are plain, but escape anyway).
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20)
      out += c;
  }
  return out + "\"";
}

/// Registers the node's event sinks (every event of their types from now on gets a row for
/// each) and writes WORKER_STARTED.
result<void> start_event_stream(outbox_repository& outbox, const runtime& rt,
                                const std::string& worker_id) {
  std::vector<registered_sink> sinks;
  std::string list;
  for (auto& [destination, sink] : rt.event_sinks) {
    registered_sink s{destination.substr(destination.find(':') + 1)};
    if (auto t = rt.event_sink_types.find(destination); t != rt.event_sink_types.end())
      s.types = t->second;
    list += (list.empty() ? "" : ",") + json_string(s.name);
    sinks.push_back(std::move(s));
  }
  if (!sinks.empty()) {
    auto registered = blocking_call<void>(registry_timeout, "events.timeout", "the database",
                                          [&](auto cb) { outbox.register_sinks(sinks, cb); });
    if (!registered)
      return registered.error();
  }
  return blocking_call<void>(registry_timeout, "events.timeout", "the database", [&](auto cb) {
    outbox.emit("WORKER_STARTED",
                R"({"worker_id":)" + json_string(worker_id) + R"(,"sinks":[)" + list + "]}",
                "worker:" + worker_id, cb);
  });
}

} // namespace

result<std::unique_ptr<node_setup>> node_setup::prepare(caf::actor_system& sys, const config& cfg,
                                                        const std::string& version) {
  std::unique_ptr<node_setup> n{new node_setup{sys, cfg}};
  n->ctx_ = std::make_shared<node_context>();
  auto& ctx = *n->ctx_;
  ctx.settings = make_node_settings(cfg);
  ctx.admission->configure(ctx.settings.admission_limits());
  n->pool_ = spawn_cpu_pool(sys, ctx.settings.cpu_workers, ctx.settings.cpu_backlog, ctx.admission);
  // The CPU pool's workers parse and render documents in helper processes, one per worker.
  n->cpu_ = make_cpu_executor(n->pool_, std::make_shared<sandbox::helper_pool>(
                                            decoder_pool_options(cfg, ctx.settings.cpu_workers)));
  ctx.cpu = n->cpu_;
  runtime_parts parts;
  parts.event_sinks = true;
  auto rt = make_runtime(cfg, *n->cpu_, parts);
  if (!rt)
    return rt.error();
  n->rt_ = std::move(*rt);
  ctx.work = n->rt_->work;
  auto env = stage_env_of(*n->rt_, n->cpu_);
  env.metrics = ctx.metrics;
  auto stages = build_stages(env);
  if (!stages)
    return stages.error();
  ctx.stages = std::move(*stages);

  if (n->rt_->outbox)
    if (auto started = start_event_stream(*n->rt_->outbox, *n->rt_, ctx.settings.worker_id);
        !started)
      return started.error();
  // The node's row in the registry before its first poll; refreshed with the heartbeat.
  n->nodes_ = std::make_shared<pg_node_repository>(cfg.database.url, n->rt_->session);
  n->me_ = this_node(cfg, ctx, version);
  std::string classes;
  ctx.metrics->set_node(n->me_.id, n->me_.version, n->me_.stages, n->me_.classes);
  if (auto registered = blocking_call<void>(registry_timeout, "nodes.timeout", "the database",
                                            [&](auto cb) { n->nodes_->register_node(n->me_, cb); });
      !registered)
    return registration_error(registered.error());
  return n;
}

node_setup::~node_setup() {
  if (!started_ && pool_)
    caf::anon_send_exit(pool_, caf::exit_reason::user_shutdown);
}

const node& node_setup::start(std::function<void(const std::string& why)> on_self_drain,
                              std::vector<periodic_task> periodic) {
  node_options opts;
  opts.cpu_pool = pool_;
  if (rt_->outbox) {
    // Messages of hand-offs on SQS and the status events leave through the outbox: this node's
    // relay sends to every stage's queue, whichever stages it serves.
    for (auto& spec : configured_queues(cfg_))
      if (auto q = rt_->open_queue(spec); !q)
        log::warn("the relay cannot send to a queue",
                  {{"queue", spec.name}, {"error", q.error().describe()}});
    opts.outbox = rt_->outbox;
    opts.destinations = rt_->queues;
    opts.sinks = rt_->event_sinks;
    opts.relay.interval = std::chrono::milliseconds{cfg_.outbox.poll_interval_ms};
    opts.relay.retention = std::chrono::hours{cfg_.outbox.retention_hours};
    opts.relay.sink_retry_max = std::chrono::milliseconds{cfg_.outbox.events_retry_max_ms};
    opts.relay.max_attempts = cfg_.outbox.max_attempts;
  }
  opts.periodic = std::move(periodic);
  // Retention: a pass of the pruner every interval.
  if (auto policy = retention_policy::from(cfg_.retention); policy && policy->any()) {
    auto p = std::make_shared<pruner>(
        std::make_unique<pg_retention_repository>(cfg_.database.url, rt_->session), rt_->storage,
        std::move(*policy), cfg_.retention.batch_size, ctx_->metrics);
    opts.periodic.push_back({"retention", [p] { return p->pass(); },
                             std::chrono::seconds{cfg_.retention.interval_seconds}});
  }
  opts.registry = nodes_;
  opts.registration.id = me_.id;
  opts.registration.incarnation = me_.incarnation;
  opts.registration.interval = ctx_->settings.heartbeat_rate;
  opts.registration.retention = std::chrono::hours{cfg_.cluster.node_retention_hours};
  opts.drain_flags = flags_;
  opts.on_self_drain = std::move(on_self_drain);
  node_ = start_node(sys_, ctx_, std::move(opts));
  started_ = true;
  return node_;
}

void node_setup::finish() {
  auto stopped
      = blocking_call<void>(registry_timeout, "nodes.timeout", "the database",
                            [&](auto cb) { nodes_->mark_stopped(me_.id, me_.incarnation, cb); });
  if (!stopped)
    log::warn("could not mark the node stopped in the registry; it shows as lost after its lease",
              {{"error", stopped.error().describe()}});
  if (!rt_->outbox)
    return;
  auto& m = *ctx_->metrics;
  auto emitted
      = blocking_call<void>(finish_timeout, "events.timeout", "the database", [&](auto cb) {
          rt_->outbox->emit("WORKER_FINISHED",
                            R"({"worker_id":)" + json_string(me_.id) + R"(,"completed":)"
                                + std::to_string(m.jobs("completed")) + R"(,"failed":)"
                                + std::to_string(m.jobs("failed")) + "}",
                            "worker:" + me_.id, cb);
        });
  if (!emitted)
    log::warn("WORKER_FINISHED not written", {{"error", emitted.error().describe()}});
}

std::vector<std::shared_ptr<queue>> node_setup::stage_queues() const {
  std::vector<std::shared_ptr<queue>> out;
  for (auto& s : ctx_->stages)
    if (std::find(out.begin(), out.end(), s->queue) == out.end())
      out.push_back(s->queue);
  return out;
}

} // namespace ingestd
