// `ingestd run`: the worker daemon. Runs until SIGTERM or SIGINT, then drains (DESIGN §3): the
// poller stops, jobs finish within the grace period or give their work back, the process exits 0.
// A second signal gives the work back at once. Whatever hangs, the process ends within the grace
// period plus shutdown_margin of the first signal (exit 1, naming what it could not release).
#include <atomic>
#include <csignal>
#include <cstdio>
#include <functional>
#include <optional>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include "actors/cpu_pool.hpp"
#include "actors/ingest_job.hpp"
#include "actors/match_job.hpp"
#include "actors/shutdown.hpp"
#include "actors/worker.hpp"
#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/support/blocking_call.hpp"
#include "adapters/support/log.hpp"
#include "admin/admin_server.hpp"
#include "app/cli.hpp"
#include "app/runtime.hpp"
#include "app/size_classes.hpp"
#include "intake/intake_server.hpp"
#include "intake/intake_service.hpp"

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

/// Forwards each signal to the shutdown coordinator until it terminates. `on_signal` runs first
/// on each signal (the admin endpoint turns not-ready).
void forward_signals_until_stopped(const shutdown_actor& coordinator, const std::function<void()>& on_signal) {
  auto stopped = std::make_shared<std::atomic<bool>>(false);
  caf::actor_cast<caf::abstract_actor*>(coordinator)->attach_functor([stopped] { *stopped = true; });
  auto set = shutdown_signals();
  timespec tick{0, 200'000'000};
  while (!*stopped) {
    int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig < 0)
      continue;
    log::info("signal received", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
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
    if (stage != "ingest" && stage != "match") {
      std::fprintf(stderr, "ingestd run: --stages: unknown stage \"%s\" (stages: ingest, match)\n", stage.c_str());
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
  // Before the actor system: it bounds the system's shutdown too (it waits for every actor).
  shutdown_watchdog watchdog{failure, pg::statements_in_progress};
  caf::actor_system_config sys_cfg;
  configure_scheduler(sys_cfg);
  caf::actor_system sys{sys_cfg};
  int exit_code = ok;
  {
    auto ctx = std::make_shared<worker_context>();
    ctx->settings = make_worker_settings(*cfg);
    auto started = std::chrono::steady_clock::now();
    auto pool =
      spawn_cpu_pool(sys, ctx->settings.cpu_workers, ctx->settings.cpu_backlog, ctx->metrics);
    auto executor = make_cpu_executor(pool);
    auto rt = make_runtime(*cfg, *executor);
    if (!rt) {
      log::error("cannot start", {{"error", rt.error().describe()}});
      std::fprintf(stderr, "ingestd run: %s\n", rt.error().describe().c_str());
      caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
      return failure;
    }
    ctx->ports = (*rt)->ports;
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
      probes.metrics = [m = ctx->metrics] { return m->prometheus(); };
      probes.matching = [intake_db]() -> result<matching_figures> {
        auto s = intake_db->summarize_matching(std::chrono::seconds{5});
        if (!s)
          return s.error();
        return matching_figures{s->matching_by_status, s->matching_in_progress_over_10_minutes,
                                s->oldest_matching_in_progress_seconds};
      };
      admin = std::make_unique<admin_server>(cfg->admin.bind, cfg->admin.port, probes);
      if (auto started = admin->start(); !started) {
        std::fprintf(stderr, "ingestd run: %s\n", started.error().describe().c_str());
        caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
        return failure;
      }
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
      }
    }
    worker_options opts;
    opts.cpu_pool = pool;
    if ((*rt)->outbox) {
      // Next jobs on SQS leave through the outbox.
      opts.outbox = (*rt)->outbox;
      opts.destinations[cfg->matching.queue_name] = ctx->ports.match_queue;
      opts.relay.interval = std::chrono::milliseconds{cfg->outbox.poll_interval_ms};
      opts.relay.retention = std::chrono::hours{cfg->outbox.retention_hours};
    }
    // worker.lifetime_units and worker.exit_after_idle_polls: the node drains itself as on SIGTERM.
    opts.on_self_drain = [a = admin.get(), &watchdog, ctx](const std::string&) {
      watchdog.arm(ctx->settings.shutdown_grace + shutdown_margin, ctx);
      if (a)
        a->set_shutting_down();
    };
    auto w = start_worker(sys, ctx, opts);
    forward_signals_until_stopped(w.coordinator, [a = admin.get(), &watchdog, ctx] {
      watchdog.arm(ctx->settings.shutdown_grace + shutdown_margin, ctx);
      if (a)
        a->set_shutting_down();
    });
    watchdog.set_stage("stopping the endpoints and adapters");
    if (intake_http)
      intake_http->stop();
    if (admin)
      admin->stop();
    log::info("ingestd stopped", {{"completed", static_cast<int64_t>(ctx->metrics->jobs("completed"))},
                                  {"failed", static_cast<int64_t>(ctx->metrics->jobs("failed"))}});
    log_capacity_usage(*ctx, started);
    // The adapters (and their threads) go before the actor system: late callbacks still find it.
  }
  watchdog.set_stage("stopping the actor system");
  return exit_code;
}

} // namespace ingestd::cli
