// `ingestd run`: the worker daemon. Runs until SIGTERM or SIGINT, then drains (DESIGN §3): the
// poller stops, jobs finish within the grace period or give their work back, the process exits 0.
// A drain request (`ingestd drain`, POST /drain on the admin port) takes the same path as the first
// signal; the node's row in the registry (worker_node) shows running, draining, then stopped.
// A second signal gives the work back at once. Whatever hangs, the process ends within the grace
// period plus shutdown_margin of the first signal (exit 1, naming what it could not release).
#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <functional>
#include <future>
#include <optional>
#include <thread>

#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include "actors/cpu_pool.hpp"
#include "actors/ingest_job.hpp"
#include "actors/match_job.hpp"
#include "actors/node_registry.hpp"
#include "actors/unpack_job.hpp"
#include "actors/shutdown.hpp"
#include "actors/worker.hpp"
#include "adapters/db/pg_connection.hpp"
#include "adapters/db/migrator.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_node_repository.hpp"
#include "adapters/http/rate_limited_client.hpp"
#include "adapters/support/blocking_call.hpp"
#include "adapters/support/log.hpp"
#include "admin/admin_server.hpp"
#include "app/cli.hpp"
#include "app/runtime.hpp"
#include "app/size_classes.hpp"
#include "intake/intake_server.hpp"
#include "intake/intake_service.hpp"
#include "review/review_setup.hpp"

#ifndef INGESTD_VERSION
#  define INGESTD_VERSION "unknown"
#endif

namespace ingestd::cli {

namespace {

/// SIGTERM and SIGINT are blocked in every thread and taken with sigtimedwait by the main
/// thread, which has nothing else to do while the worker runs.
sigset_t shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

/// Forwards each signal to the shutdown coordinator until it terminates, and a drain request
/// (`ingestd drain`, POST /drain: `flags.drain_requested`) once, as the first signal: one drain
/// path. `on_signal` runs first on each (the admin endpoint turns not-ready).
void forward_signals_until_stopped(const shutdown_actor& coordinator, node_drain_flags& flags,
                                   const std::function<void()>& on_signal) {
  auto stopped = std::make_shared<std::atomic<bool>>(false);
  caf::actor_cast<caf::abstract_actor*>(coordinator)->attach_functor([stopped] { *stopped = true; });
  auto set = shutdown_signals();
  timespec tick{0, 200'000'000};
  while (!*stopped) {
    int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig < 0) {
      // A drain request starts a shutdown; one that comes while the node already drains changes
      // nothing (it must not count as a second signal, which gives the work back at once).
      if (flags.draining || !flags.drain_requested)
        continue;
      log::info("drain requested: shutting down as on SIGTERM");
    } else {
      log::info("signal received", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
    }
    flags.draining = true;
    if (on_signal)
      on_signal();
    caf::anon_send(coordinator, shutdown_atom_v);
  }
}

/// `--stages LIST` (or `--stages=LIST`): nullopt when not given; an inner nullopt after a usage
/// message when its value is missing.
std::optional<std::optional<std::string>> stages_argument(const arguments& args) {
  for (size_t i = 0; i < args.raw.size(); ++i) {
    auto& a = args.raw[i];
    if (a.rfind("--stages=", 0) == 0)
      return std::optional<std::string>{a.substr(9)};
    if (a == "--stages") {
      if (i + 1 < args.raw.size())
        return std::optional<std::string>{args.raw[i + 1]};
      std::fputs("ingestd run: --stages needs a comma-separated list of stages, e.g. --stages ingest,match\n",
                 stderr);
      return std::optional<std::string>{};
    }
  }
  return std::nullopt;
}

/// The stages of `--stages` must be known and enabled: the same check as stages.serve's.
bool check_stages(const config& cfg) {
  auto list = stage_list(cfg.stages.serve);
  if (list.empty()) {
    std::fputs("ingestd run: --stages names no stage\n", stderr);
    return false;
  }
  for (auto& stage : list) {
    if (stage != "ingest" && stage != "match" && stage != "unpack") {
      std::fprintf(stderr, "ingestd run: --stages: unknown stage \"%s\" (stages: ingest, match, unpack)\n",
                   stage.c_str());
      return false;
    }
    if (!stage_enabled(cfg, stage)) {
      std::fprintf(stderr, "ingestd run: --stages: %s is not enabled (stages.enabled is \"%s\")\n",
                   stage.c_str(), cfg.stages.enabled.c_str());
      return false;
    }
  }
  return true;
}

/// Every queue the node's stages read: the ingest queue (the small class's), the large class's,
/// the matching and the unpack queues, as far as the node has them.
std::vector<std::shared_ptr<queue>> stage_queues(const worker_ports& p) {
  std::vector<std::shared_ptr<queue>> out;
  for (auto* q : {&p.ingest_queue, &p.large_ingest_queue, &p.match_queue, &p.unpack_queue})
    if (*q)
      out.push_back(*q);
  return out;
}

/// The depth of each queue, asked of all at once under one deadline (for /metrics).
std::vector<queue_depth> queue_depths(const std::vector<std::shared_ptr<queue>>& queues) {
  std::vector<std::future<result<queue_stats>>> asked;
  for (auto& q : queues) {
    auto answer = std::make_shared<std::promise<result<queue_stats>>>();
    asked.push_back(answer->get_future());
    q->stats([answer](result<queue_stats> r) { answer->set_value(std::move(r)); });
  }
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  std::vector<queue_depth> out;
  for (size_t i = 0; i < queues.size(); ++i) {
    queue_depth d{queues[i]->name()};
    if (asked[i].wait_until(until) == std::future_status::ready)
      d.stats = asked[i].get();
    else
      d.stats = error::make_transient("admin.timeout", "the queue did not answer within 5 s");
    out.push_back(std::move(d));
  }
  return out;
}

/// The registry's writes at start and stop wait at most this.
constexpr std::chrono::seconds registry_timeout{30};

/// This process as the registry shows it.
node_registration this_node(const config& cfg, const worker_settings& s) {
  node_registration me;
  me.id = s.worker_id;
  me.incarnation = uuid::v4();
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) == 0)
    me.host = host.data();
  me.pid = static_cast<int32_t>(::getpid());
  me.version = INGESTD_VERSION;
  for (auto& stage : served_stages(cfg)) {
    me.stages.append(me.stages.empty() ? "" : ",").append(stage);
    if (stage == "ingest" && cfg.classes.enabled)
      for (auto& cls : stage_list(cfg.worker.classes))
        me.classes.append(me.classes.empty() ? "" : ",").append(cls);
  }
  me.capacity = s.max_in_flight;
  me.lease = s.lease;
  return me;
}

/// A registry that is missing is a schema not migrated yet: say so.
error registration_error(error e) {
  if (e.message.find("worker_node") != std::string::npos && e.message.find("does not exist") != std::string::npos)
    e.message += " (the schema predates this node: run `ingestd migrate` first)";
  e.message = "registering the node: " + e.message;
  return e;
}

/// What the node used of its capacity over its life (worker.lifetime_units: a replacement starts).
void log_capacity_usage(const worker_context& ctx, std::chrono::steady_clock::time_point started) {
  auto& m = *ctx.metrics;
  auto& s = ctx.settings;
  auto uptime_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  auto budget = s.capacity_slots > 0 ? s.capacity_slots : s.max_in_flight;
  auto average = uptime_ms > 0 && budget > 0
                   ? static_cast<double>(m.slot_ms_used.load()) / (static_cast<double>(uptime_ms) * budget)
                   : 0.0;
  log::info("capacity usage", {{"units_admitted", m.units_admitted.load()},
                               {"lifetime_units", s.lifetime_units},
                               {"capacity_slots", static_cast<int64_t>(s.capacity_slots)},
                               {"peak_slots_in_use", m.peak_slots_in_use.load()},
                               {"average_usage_ratio", average},
                               {"escalations", m.escalations.load()},
                               {"uptime_ms", static_cast<int64_t>(uptime_ms)}});
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

/// Registers this node's event sinks (every event from now on gets a row for each) and writes
/// WORKER_STARTED.
result<void> start_event_stream(outbox_repository& outbox,
                                const std::map<std::string, std::shared_ptr<event_sink>>& sinks,
                                const std::string& worker_id) {
  std::vector<std::string> names;
  std::string list;
  for (auto& [destination, sink] : sinks) {
    names.push_back(destination.substr(destination.find(':') + 1));
    list += (list.empty() ? "" : ",") + json_string(names.back());
  }
  if (!names.empty()) {
    auto registered = blocking_call<void>(std::chrono::seconds{30}, "events.timeout", "the database",
                                          [&](auto cb) { outbox.register_sinks(names, cb); });
    if (!registered)
      return registered.error();
  }
  auto emitted = blocking_call<void>(std::chrono::seconds{30}, "events.timeout", "the database", [&](auto cb) {
    outbox.emit("WORKER_STARTED", R"({"worker_id":)" + json_string(worker_id) + R"(,"sinks":[)" + list + "]}",
                "worker:" + worker_id, cb);
  });
  if (!emitted)
    return emitted.error();
  return {};
}

/// WORKER_FINISHED, delivered by the relay of this or another node (this one has stopped).
void finish_event_stream(outbox_repository& outbox, const std::string& worker_id, uint64_t completed,
                         uint64_t failed) {
  // Briefly: a database that does not answer must not hold the node's exit.
  auto emitted = blocking_call<void>(std::chrono::seconds{2}, "events.timeout", "the database", [&](auto cb) {
    outbox.emit("WORKER_FINISHED",
                R"({"worker_id":)" + json_string(worker_id) + R"(,"completed":)" + std::to_string(completed)
                  + R"(,"failed":)" + std::to_string(failed) + "}",
                "worker:" + worker_id, cb);
  });
  if (!emitted)
    log::warn("WORKER_FINISHED not written", {{"error", emitted.error().describe()}});
}

/// Why the daemon does not start, in its log and as the command line's own message.
int refuse_to_start(const error& e) {
  log::error("cannot start", {{"error", e.describe()}});
  std::fprintf(stderr, "ingestd run: %s\n", e.describe().c_str());
  return failure;
}

} // namespace

int run_command(const arguments& args) {
  // Before any thread starts, so that every thread inherits the mask.
  auto blocked = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  if (auto only = stages_argument(args)) {
    if (!*only)
      return usage;
    cfg->stages.serve = **only;
    if (!check_stages(*cfg))
      return failure;
  }
  // Before anything connects: an open intake without a token is a configuration error.
  if (cfg->intake.port != 0)
    if (auto exposed = check_intake_exposure(cfg->intake.bind, cfg->secrets.intake_token); !exposed)
      return refuse_to_start(exposed.error());
  // Before anything else touches the database: a schema that needs a newer node stops it here.
  if (auto compatible = check_node_version(cfg->database.url, INGESTD_VERSION); !compatible)
    return refuse_to_start(compatible.error());
  if (auto review = check_review_config(*cfg); !review)
    return refuse_to_start(review.error());
  // Before the actor system: it bounds the system's shutdown too (it waits for every actor).
  shutdown_watchdog watchdog{failure, pg::statements_in_progress};
  caf::actor_system_config sys_cfg;
  configure_scheduler(sys_cfg);
  caf::actor_system sys{sys_cfg};
  int exit_code = ok;
  {
    auto ctx = std::make_shared<worker_context>();
    ctx->settings = make_worker_settings(*cfg);
    auto flags = std::make_shared<node_drain_flags>();
    auto started = std::chrono::steady_clock::now();
    auto pool =
      spawn_cpu_pool(sys, ctx->settings.cpu_workers, ctx->settings.cpu_backlog, ctx->metrics);
    auto executor = make_cpu_executor(pool);
    runtime_parts parts;
    parts.event_sinks = true;
    auto rt = make_runtime(*cfg, *executor, parts);
    if (!rt) {
      log::error("cannot start", {{"error", rt.error().describe()}});
      std::fprintf(stderr, "ingestd run: %s\n", rt.error().describe().c_str());
      caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
      return failure;
    }
    ctx->ports = (*rt)->ports;
    ctx->ports.cpu = executor;
    log::info("ingestd starting",
              {{"worker_id", ctx->settings.worker_id},
               {"queue_backend", cfg->queue.backend},
               {"queue", cfg->queue.name},
               {"stages", cfg->stages.serve.empty() ? cfg->stages.enabled : cfg->stages.serve},
               {"storage_backend", cfg->storage.backend},
               {"database", mask_url_password(cfg->database.url)},
               {"ocr", cfg->transcription.provider},
               {"extractor", cfg->extraction.provider},
               {"max_in_flight", cfg->worker.max_in_flight},
               {"cpu_workers", ctx->settings.cpu_workers}});
    // Intake and admin endpoints, each on threads of its own (port 0: off).
    intake_options intake_opts;
    intake_opts.max_bytes = static_cast<size_t>(
      std::min(cfg->transcription.max_file_bytes, cfg->storage.max_object_bytes));
    configure_intake_classes(*cfg, ctx->ports, intake_opts);
    auto intake_db = std::make_shared<pg_intake_repository>(cfg->database.url);
    intake_opts.unpack_queue = (*rt)->ports.unpack_queue;
    auto intake = std::make_shared<intake_service>(intake_db, (*rt)->ports.ingest_queue, (*rt)->ports.storage,
                                                   intake_opts);
    std::unique_ptr<intake_server> intake_http;
    if (cfg->intake.port != 0) {
      intake_server_options o;
      o.bind = cfg->intake.bind;
      o.port = cfg->intake.port;
      o.default_tenant = uuid::parse(cfg->intake.default_tenant);
      o.bearer_token = cfg->secrets.intake_token;
      intake_http = std::make_unique<intake_server>(intake, o);
      if (auto started = intake_http->start(); !started) {
        caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
        return refuse_to_start(started.error());
      }
    }
    std::unique_ptr<admin_server> admin;
    if (cfg->admin.port != 0) {
      admin_probes probes;
      probes.database = [intake_db] { return intake_db->ping(std::chrono::seconds{5}); };
      probes.queue = [q = (*rt)->ports.ingest_queue]() {
        return blocking_call<queue_stats>(std::chrono::seconds{5}, "admin.timeout", "the queue",
                                          [&](auto cb) { q->stats(cb); });
      };
      probes.queues = [queues = stage_queues((*rt)->ports)] { return queue_depths(queues); };
      probes.metrics = [m = ctx->metrics, limiters = (*rt)->limiters] {
        return m->prometheus() + provider_limits_prometheus(limiters);
      };
      probes.drain = [flags] { flags->drain_requested = true; };
      probes.drain_token = cfg->secrets.admin_token;
      probes.matching = [intake_db]() -> result<matching_figures> {
        auto s = intake_db->summarize_matching(std::chrono::seconds{5});
        if (!s)
          return s.error();
        return matching_figures{s->matching_by_status, s->matching_in_progress_over_10_minutes,
                                s->oldest_matching_in_progress_seconds};
      };
      admin = std::make_unique<admin_server>(cfg->admin.bind, cfg->admin.port, probes);
      if (cfg->review.enabled)
        if (auto mounted = mount_review_desk(*admin, *cfg, (*rt)->ports.ingest_queue, (*rt)->ports.storage,
                                             executor); !mounted) {
          caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
          return refuse_to_start(mounted.error());
        }
      if (auto started = admin->start(); !started) {
        std::fprintf(stderr, "ingestd run: %s\n", started.error().describe().c_str());
        caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
        return failure;
      }
      if (cfg->review.enabled)
        log::info("review desk listening", {{"address", review_address(*cfg, admin->port())}});
    }
    // A poller per served stage, each under its own limit and the node's.
    for (auto& name : served_stages(*cfg)) {
      if (name == "ingest" && cfg->classes.enabled) {
        // Size classes (seed 004): the ingest stage once per class this node serves.
        for (auto& cls : make_size_class_stages(*cfg, *ctx, cfg->stages.ingest_max_in_flight))
          ctx->stages.push_back(std::move(cls));
      } else if (name == "ingest") {
        auto ingest = make_ingest_stage(*ctx);
        ingest->max_in_flight = cfg->stages.ingest_max_in_flight;
        ingest->queue_name = cfg->queue.name;
        ctx->stages.push_back(std::move(ingest));
      } else if (name == "match") {
        match_stage_settings m;
        m.queue = ctx->ports.match_queue;
        m.queue_name = cfg->matching.queue_name;
        m.max_in_flight = cfg->matching.max_in_flight;
        m.max_attempts = cfg->matching.max_receive_count;
        m.retry_backoff.clear();
        for (auto x : cfg->matching.retry_backoff_seconds)
          m.retry_backoff.emplace_back(x);
        m.candidate_limit = cfg->matching.candidate_limit;
        ctx->stages.push_back(make_match_stage(*ctx, m));
      } else if (name == "unpack") {
        unpack_stage_settings u;
        u.queue = ctx->ports.unpack_queue;
        u.queue_name = cfg->containers.queue_name;
        u.max_in_flight = cfg->containers.max_in_flight;
        u.max_depth = cfg->containers.max_depth;
        ctx->stages.push_back(make_unpack_stage(*ctx, u));
      }
    }
    worker_options opts;
    opts.cpu_pool = pool;
    if ((*rt)->outbox) {
      // Next jobs on SQS and the status events leave through the outbox.
      opts.outbox = (*rt)->outbox;
      if (ctx->ports.match_queue)
        opts.destinations[cfg->matching.queue_name] = ctx->ports.match_queue;
      if (ctx->ports.unpack_queue) {
        // A container's children: documents to the ingest queue, containers to the unpack queue.
        opts.destinations[cfg->queue.name] = ctx->ports.ingest_queue;
        opts.destinations[cfg->containers.queue_name] = ctx->ports.unpack_queue;
      }
      opts.sinks = (*rt)->event_sinks;
      opts.relay.interval = std::chrono::milliseconds{cfg->outbox.poll_interval_ms};
      opts.relay.retention = std::chrono::hours{cfg->outbox.retention_hours};
      opts.relay.sink_retry_max = std::chrono::milliseconds{cfg->outbox.events_retry_max_ms};
      if (auto started = start_event_stream(*(*rt)->outbox, (*rt)->event_sinks, ctx->settings.worker_id);
          !started) {
        caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
        return refuse_to_start(started.error());
      }
    }
    // The node's row in the registry before its first poll; refreshed with the heartbeat.
    auto nodes = std::make_shared<pg_node_repository>(
      cfg->database.url, pg::session_options{std::chrono::seconds{cfg->database.statement_timeout_seconds},
                                             std::chrono::seconds{cfg->database.lock_timeout_seconds},
                                             std::chrono::seconds{cfg->database.tcp_user_timeout_seconds}});
    auto me = this_node(*cfg, ctx->settings);
    ctx->metrics->set_node(me.id, me.version, me.stages, me.classes);
    if (auto registered = blocking_call<void>(registry_timeout, "nodes.timeout", "the database",
                                              [&](auto cb) { nodes->register_node(me, cb); });
        !registered) {
      caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
      return refuse_to_start(registration_error(registered.error()));
    }
    node_registry_settings reg;
    reg.id = me.id;
    reg.incarnation = me.incarnation;
    reg.interval = ctx->settings.heartbeat_rate;
    reg.retention = std::chrono::hours{cfg->cluster.node_retention_hours};
    auto registry = spawn_node_registry(sys, nodes, reg, ctx->metrics, flags);
    // worker.lifetime_units and worker.exit_after_idle_polls: the node drains itself as on SIGTERM.
    opts.on_self_drain = [a = admin.get(), &watchdog, ctx](const std::string&) {
      watchdog.arm(ctx->settings.shutdown_grace + shutdown_margin, ctx);
      if (a)
        a->set_shutting_down();
    };
    auto w = start_worker(sys, ctx, opts);
    forward_signals_until_stopped(w.coordinator, *flags, [a = admin.get(), &watchdog, ctx] {
      watchdog.arm(ctx->settings.shutdown_grace + shutdown_margin, ctx);
      if (a)
        a->set_shutting_down();
    });
    watchdog.set_stage("marking the node stopped in the registry");
    caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
    if (auto stopped = blocking_call<void>(registry_timeout, "nodes.timeout", "the database",
                                           [&](auto cb) { nodes->mark_stopped(me.id, me.incarnation, cb); });
        !stopped)
      log::warn("could not mark the node stopped in the registry; it shows as lost after its lease",
                {{"error", stopped.error().describe()}});
    watchdog.set_stage("stopping the endpoints and adapters");
    if (intake_http)
      intake_http->stop();
    if (admin)
      admin->stop();
    if ((*rt)->outbox) {
      watchdog.set_stage("writing WORKER_FINISHED");
      finish_event_stream(*(*rt)->outbox, ctx->settings.worker_id, ctx->metrics->jobs("completed"),
                          ctx->metrics->jobs("failed"));
      watchdog.set_stage("stopping the endpoints and adapters");
    }
    log::info("ingestd stopped", {{"completed", static_cast<int64_t>(ctx->metrics->jobs("completed"))},
                                  {"failed", static_cast<int64_t>(ctx->metrics->jobs("failed"))}});
    log_capacity_usage(*ctx, started);
    // The adapters (and their threads) go before the actor system: late callbacks still find it.
  }
  watchdog.set_stage("stopping the actor system");
  return exit_code;
}

} // namespace ingestd::cli
