// `ingestd run`: the worker daemon. Runs until SIGTERM or SIGINT, then drains (DESIGN §3): the
// poller stops, jobs finish within the grace period or give their work back, the process exits 0.
// A second signal gives the work back at once.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/cpu_pool.hpp"
#include "actors/worker.hpp"
#include "adapters/support/log.hpp"
#include "app/cli.hpp"
#include "app/runtime.hpp"

namespace ingestd::cli {

namespace {

/// Waits for SIGTERM/SIGINT on its own thread (blocked everywhere else) and forwards each to
/// the shutdown coordinator.
class signal_forwarder {
public:
  explicit signal_forwarder(shutdown_actor coordinator) : coordinator_(std::move(coordinator)) {
    thread_ = std::thread{[this] { loop(); }};
  }
  ~signal_forwarder() {
    stop_ = true;
    thread_.join();
  }

  static void block_in_this_thread() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }

private:
  void loop() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    timespec tick{0, 200'000'000};
    while (!stop_) {
      int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig < 0)
        continue;
      log::info("signal received", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
      caf::anon_send(coordinator_, shutdown_atom_v);
    }
  }

  shutdown_actor coordinator_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

} // namespace

int run_command(const arguments& args) {
  // Before any thread starts, so that every thread inherits the mask.
  signal_forwarder::block_in_this_thread();
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  caf::actor_system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  int exit_code = ok;
  {
    auto ctx = std::make_shared<worker_context>();
    ctx->settings = make_worker_settings(*cfg);
    auto pool = spawn_cpu_pool(sys, cpu_pool_size(cfg->worker.preprocessing_pool_size_dec),
                               ctx->settings.cpu_backlog, ctx->metrics);
    auto executor = make_cpu_executor(pool);
    auto rt = make_runtime(*cfg, *executor);
    if (!rt) {
      log::error("cannot start", {{"error", rt.error().describe()}});
      std::fprintf(stderr, "ingestd run: %s\n", rt.error().describe().c_str());
      caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
      return failure;
    }
    ctx->ports.ingest_queue = (*rt)->ingest_queue;
    ctx->ports.storage = (*rt)->storage;
    ctx->ports.db = (*rt)->db;
    ctx->ports.ocr = (*rt)->ocr;
    ctx->ports.extract = (*rt)->extract;
    ctx->ports.on_failed = (*rt)->on_failed;
    log::info("ingestd starting",
              {{"worker_id", ctx->settings.worker_id},
               {"queue_backend", cfg->queue.backend},
               {"queue", cfg->queue.name},
               {"storage_backend", cfg->storage.backend},
               {"database", mask_url_password(cfg->database.url)},
               {"ocr", cfg->transcription.provider},
               {"extractor", cfg->extraction.provider},
               {"max_in_flight", cfg->worker.max_in_flight},
               {"cpu_workers", cpu_pool_size(cfg->worker.preprocessing_pool_size_dec)}});
    worker_options opts;
    opts.cpu_pool = pool;
    auto w = start_worker(sys, ctx, opts);
    {
      signal_forwarder signals{w.coordinator};
      caf::scoped_actor self{sys};
      self->wait_for(w.coordinator);
    }
    log::info("ingestd stopped", {{"completed", static_cast<int64_t>(ctx->metrics->jobs("completed"))},
                                  {"failed", static_cast<int64_t>(ctx->metrics->jobs("failed"))}});
    // The adapters (and their threads) go before the actor system: late callbacks still find it.
  }
  return exit_code;
}

} // namespace ingestd::cli
