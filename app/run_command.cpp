// `ingestd run`: the worker daemon. Runs until SIGTERM or SIGINT, then drains: the
// poller stops, jobs finish within the grace period or give their work back, the process exits 0.
// A drain request (`ingestd drain`, POST /drain on the admin port) takes the same path as the first
// signal; the node's row in the registry (worker_node) shows running, draining, then stopped.
// A second signal gives the work back at once. Whatever hangs, the process ends within the grace
// period plus shutdown_margin of the first signal (exit 1, naming what it could not release).
#include <atomic>
#include <csignal>
#include <cstdio>
#include <functional>
#include <future>
#include <optional>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include "actors/node.hpp"
#include "actors/shutdown.hpp"
#include "adapters/db/migrator.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/http/rate_limited_client.hpp"
#include "adapters/http_server/checks.hpp"
#include "adapters/support/blocking_call.hpp"
#include "adapters/support/log.hpp"
#include "admin/admin_server.hpp"
#include "app/cli.hpp"
#include "app/intake_setup.hpp"
#include "app/node_setup.hpp"
#include "intake/intake_server.hpp"
#include "intake/intake_service.hpp"
#include "intake/mailbox_intake.hpp"
#include "review/review_setup.hpp"
#include "stages/registry.hpp"

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
  caf::actor_cast<caf::abstract_actor*>(coordinator)->attach_functor([stopped] {
    *stopped = true;
  });
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
      std::fputs("ingestd run: --stages needs a comma-separated list of stages, e.g. --stages "
                 "ingest,match\n",
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
    if (find_stage(stage) == nullptr) {
      std::string known;
      for (auto& s : stage_registry())
        known.append(known.empty() ? "" : ", ").append(s.name);
      std::fprintf(stderr, "ingestd run: --stages: unknown stage \"%s\" (stages: %s)\n",
                   stage.c_str(), known.c_str());
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

/// What the node used of its capacity over its life (worker.lifetime_units: a replacement starts).
void log_capacity_usage(const node_context& ctx, std::chrono::steady_clock::time_point started) {
  auto& a = *ctx.admission;
  auto& s = ctx.settings;
  auto uptime_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - started)
                       .count();
  auto budget = s.capacity_slots > 0 ? s.capacity_slots : s.max_in_flight;
  auto average = uptime_ms > 0 && budget > 0 ? static_cast<double>(a.slot_ms_used())
                                                   / (static_cast<double>(uptime_ms) * budget)
                                             : 0.0;
  log::info("capacity usage", {{"units_admitted", a.units_admitted()},
                               {"lifetime_units", s.lifetime_units},
                               {"capacity_slots", static_cast<int64_t>(s.capacity_slots)},
                               {"peak_slots_in_use", a.peak_slots_in_use()},
                               {"average_usage_ratio", average},
                               {"escalations", ctx.metrics->escalations.load()},
                               {"uptime_ms", static_cast<int64_t>(uptime_ms)}});
}

/// The admin endpoint's token when it is set but shorter than http_server::min_token_length (the
/// intake's are judged by intake_access_of).
result<void> check_admin_token(const config& cfg) {
  if (cfg.admin.port != 0)
    if (auto weak = http_server::weak_token("INGESTD_ADMIN_TOKEN", cfg.secrets.admin_token))
      return error::make_permanent("config.weak_token", *weak);
  return {};
}

/// The HTTP limits of an endpoint's section (intake, admin).
template <class Section>
http_server::endpoint_limits limits_of(const Section& s, size_t max_buffered_bytes) {
  http_server::endpoint_limits out;
  out.max_connections = static_cast<unsigned>(s.max_connections);
  out.max_connections_per_address = static_cast<unsigned>(s.max_connections_per_address);
  out.header_timeout = std::chrono::seconds{s.header_timeout_seconds};
  out.request_timeout = std::chrono::seconds{s.request_timeout_seconds};
  out.max_buffered_bytes = max_buffered_bytes;
  return out;
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
  // Before anything else: a bad or short token is a configuration error, and so is an intake on a
  // public address without credentials (the database is asked for its tenants' tokens when the
  // environment has none).
  if (auto admin_token = check_admin_token(*cfg); !admin_token)
    return refuse_to_start(admin_token.error());
  auto intake_db
      = std::make_shared<pg_intake_repository>(cfg->database.url, cfg->queue.backend == "sqs");
  std::shared_ptr<intake_access> access;
  if (cfg->intake.port != 0) {
    auto configured = intake_access_of(*cfg, intake_db);
    if (!configured)
      return refuse_to_start(configured.error());
    access = std::move(*configured);
    if (auto exposed = check_intake_access(cfg->intake.bind, access.get()); !exposed)
      return refuse_to_start(exposed.error());
  }
  // Before anything else touches the database: a schema that needs a newer node stops it here.
  if (auto compatible = check_node_version(cfg->database.url, INGESTD_VERSION); !compatible)
    return refuse_to_start(compatible.error());
  if (auto review = check_review_config(*cfg); !review)
    return refuse_to_start(review.error());
  auto boxes = configured_mailboxes(*cfg);
  if (!boxes)
    return refuse_to_start(boxes.error());
  // Before the actor system: it bounds the system's shutdown too (it waits for every actor).
  shutdown_watchdog watchdog{failure, pg::statements_in_progress};
  caf::actor_system_config sys_cfg;
  configure_scheduler(sys_cfg);
  caf::actor_system sys{sys_cfg};
  int exit_code = ok;
  {
    auto started = std::chrono::steady_clock::now();
    auto setup = node_setup::prepare(sys, *cfg, INGESTD_VERSION);
    if (!setup)
      return refuse_to_start(setup.error());
    auto& n = **setup;
    auto ctx = n.context();
    auto& rt = n.adapters();
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
    // With size classes, intake counts a document's pages: in a decoder helper of its own, so that
    // the CPU workers keep theirs.
    std::shared_ptr<sandbox::decoder> counter;
    if (cfg->classes.enabled)
      counter = std::make_shared<sandbox::helper_pool>(decoder_pool_options(*cfg, 1));
    auto intake
        = std::make_shared<intake_service>(intake_db, rt.storage, intake_options_of(*cfg, counter));
    // Mailboxes: a pass over them every poll interval, on a periodic actor of their own.
    std::vector<periodic_task> background;
    // A pass that runs when the node stops ends after the item in hand (the node waits for it).
    std::vector<std::function<void()>> stop_background;
    if (!boxes->empty()) {
      // Between passes, IMAP IDLE where the servers have it; the interval bounds each wait.
      auto interval = std::chrono::seconds{cfg->acquisition.poll_interval_seconds};
      auto mail = std::make_shared<mailbox_intake>(intake, std::move(*boxes),
                                                   cfg->acquisition.batch_size, interval);
      background.push_back({"mailboxes", [mail] { return mail->pass(); }, interval});
      stop_background.emplace_back([mail] { mail->stop(); });
    }
    // Buckets: their notification queues read every poll interval, on another.
    auto buckets = configured_buckets(*cfg, rt);
    if (!buckets)
      return refuse_to_start(buckets.error());
    if (!buckets->empty()) {
      auto inbound = std::make_shared<bucket_intake>(
          intake, std::move(*buckets), std::chrono::seconds{cfg->acquisition.timeout_seconds});
      background.push_back({"buckets", [inbound] { return inbound->pass(); },
                            std::chrono::seconds{cfg->acquisition.poll_interval_seconds}});
      stop_background.emplace_back([inbound] { inbound->stop(); });
    }
    std::unique_ptr<intake_server> intake_http;
    if (cfg->intake.port != 0) {
      intake_server_options o;
      o.bind = cfg->intake.bind;
      o.port = cfg->intake.port;
      o.default_tenant = uuid::parse(cfg->intake.default_tenant);
      o.access = access;
      o.allowed_hosts = name_list(cfg->intake.allowed_hosts);
      o.limits = limits_of(cfg->intake, static_cast<size_t>(cfg->intake.max_buffered_bytes));
      intake_http = std::make_unique<intake_server>(intake, o);
      if (auto up = intake_http->start(); !up)
        return refuse_to_start(up.error());
    }
    std::unique_ptr<admin_server> admin;
    auto flags = n.drain_flags();
    if (cfg->admin.port != 0) {
      admin_probes probes;
      probes.database = [intake_db] { return intake_db->ping(std::chrono::seconds{5}); };
      probes.queue = [q = n.stage_queues().front()]() {
        return blocking_call<queue_stats>(std::chrono::seconds{5}, "admin.timeout", "the queue",
                                          [&](auto cb) { q->stats(cb); });
      };
      probes.queues = [queues = n.stage_queues()] { return queue_depths(queues); };
      probes.metrics = [m = ctx->metrics, providers = rt.providers.get()] {
        return m->prometheus() + provider_limits_prometheus(providers->limiters());
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
      probes.tenants
          = [intake_db] { return intake_db->tenant_work_figures(200, std::chrono::seconds{5}); };
      if (rt.outbox)
        probes.outbox = [outbox = rt.outbox]() {
          return blocking_call<outbox_figures>(std::chrono::seconds{5}, "admin.timeout",
                                               "the database",
                                               [&](auto cb) { outbox->figures(cb); });
        };
      admin_http_options http;
      http.allowed_hosts = name_list(cfg->admin.allowed_hosts);
      // The desk's bodies are at most 1 MiB, /drain's 4 KiB.
      http.limits = limits_of(cfg->admin, size_t{16} << 20);
      admin = std::make_unique<admin_server>(cfg->admin.bind, cfg->admin.port, probes, http);
      if (cfg->review.enabled)
        if (auto mounted = mount_review_desk(*admin, *cfg, rt.storage, n.cpu()); !mounted)
          return refuse_to_start(mounted.error());
      if (auto up = admin->start(); !up)
        return refuse_to_start(up.error());
      if (cfg->review.enabled)
        log::info("review desk listening", {{"address", review_address(*cfg, admin->port())}});
    }
    // The node's context keeps this (its drain hook): a weak pointer, or the two keep each other.
    auto arm_watchdog
        = [a = admin.get(), &watchdog, weak = std::weak_ptr<node_context>{ctx}, stop_background] {
            for (const auto& stop : stop_background)
              stop();
            if (auto c = weak.lock())
              watchdog.arm(c->settings.shutdown_grace + shutdown_margin, c);
            if (a)
              a->set_shutting_down();
          };
    // worker.lifetime_units and worker.exit_after_idle_polls: the node drains itself as on SIGTERM.
    auto& actors
        = n.start([arm_watchdog](const std::string&) { arm_watchdog(); }, std::move(background));
    forward_signals_until_stopped(actors.coordinator, *flags, arm_watchdog);
    watchdog.set_stage("marking the node stopped in the registry");
    n.finish();
    watchdog.set_stage("stopping the endpoints and adapters");
    if (intake_http)
      intake_http->stop();
    if (admin)
      admin->stop();
    log::info("ingestd stopped",
              {{"completed", static_cast<int64_t>(ctx->metrics->jobs("completed"))},
               {"failed", static_cast<int64_t>(ctx->metrics->jobs("failed"))}});
    log_capacity_usage(*ctx, started);
    // The adapters (and their threads) go before the actor system: late callbacks still find it.
  }
  watchdog.set_stage("stopping the actor system");
  return exit_code;
}

} // namespace ingestd::cli
