// While the CPU pool is saturated with real OCR (one worker per core, a standing backlog), how
// late do the heartbeat's ticks fire? Prints the p50/p99 of tick lateness and the pages OCR'd.
//
//   bench_heartbeat_under_load [seconds=30] [scan=tests/fixtures/corpus/inv01_en_classic_scan.png]
//
// Run it with OMP_THREAD_LIMIT=1, as the daemon does. The heartbeat ticks every second and
// extends 200 tracked claims each time against in-process ports that answer at once, so the
// figure is the scheduling delay the actors see, not a database's latency.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include "actors/cpu_pool.hpp"
#include "actors/heartbeat.hpp"
#include "actors/node.hpp"
#include "adapters/ocr/local_transcriber.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

/// Answers every call at once: only the actors' own scheduling is measured.
struct instant_queue : queue {
  void receive(int, std::chrono::seconds, std::chrono::seconds,
               callback<std::vector<queue_message>> done) override {
    done(std::vector<queue_message>{});
  }
  void remove(std::vector<std::string> r, callback<std::vector<batch_entry_result>> done) override {
    done(std::vector<batch_entry_result>(r.size()));
  }
  void change_visibility(std::vector<visibility_change> c,
                         callback<std::vector<batch_entry_result>> done) override {
    std::vector<batch_entry_result> out;
    out.reserve(c.size());
    for (auto& x : c)
      out.push_back(batch_entry_result{x.receipt});
    done(std::move(out));
  }
  void send(std::vector<outgoing_message> m,
            callback<std::vector<batch_entry_result>> done) override {
    done(std::vector<batch_entry_result>(m.size()));
  }
  void stats(callback<queue_stats> done) override { done(queue_stats{}); }
  std::string name() const override { return "instant"; }
};

/// The claimed-work port answering every call at once: every lease renewed, no cancel request.
struct instant_work : work_repository {
  void claim(std::vector<claim_request>, std::string, std::chrono::seconds,
             callback<std::vector<claim_answer>> done) override {
    done(std::vector<claim_answer>{});
  }
  void renew_leases(std::vector<claim_ref>, std::chrono::seconds,
                    callback<std::vector<claim_ref>> done) override {
    done(std::vector<claim_ref>{});
  }
  void cancel_requests(std::vector<uuid>, callback<std::vector<uuid>> done) override {
    done(std::vector<uuid>{});
  }
  void complete(std::vector<work_outcome> o, callback<std::vector<result<void>>> done) override {
    done(std::vector<result<void>>(o.size()));
  }
  void record_failure(claim_ref, failure_record, std::chrono::seconds, std::vector<audit_event>,
                      callback<failure_outcome> done) override {
    done(failure_outcome{});
  }
  void release(claim_ref, std::chrono::seconds, std::vector<audit_event>,
               callback<void> done) override {
    done({});
  }
  void record_cancelled(claim_ref, std::vector<audit_event>, callback<void> done) override {
    done({});
  }
  void append_audit(std::vector<audit_event>, callback<void> done) override { done({}); }
  void revive(revive_request, callback<int64_t> done) override { done(int64_t{0}); }
};

} // namespace

int main(int argc, char** argv) {
  int seconds = argc > 1 ? std::atoi(argv[1]) : 30;
  std::string scan = argc > 2 ? argv[2] : "tests/fixtures/corpus/inv01_en_classic_scan.png";
  std::ifstream in{scan, std::ios::binary};
  if (!in) {
    std::fprintf(stderr, "cannot read %s (run from the project folder or pass the path)\n",
                 scan.c_str());
    return 1;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  auto bytes = buf.str();

  caf::actor_system_config cfg;
  configure_scheduler(cfg); // as `ingestd run`
  caf::actor_system sys{cfg};
  // One stage over the instant queue, cancellable as the ingest stage is (the heartbeat asks
  // for its cancel requests at every tick too).
  auto st = std::make_shared<stage>();
  st->name = "ingest";
  st->label = "ingest";
  st->queue = std::make_shared<instant_queue>();
  st->queue_name = "instant";
  st->cancellable = true;
  auto ctx = std::make_shared<node_context>();
  ctx->work = std::make_shared<instant_work>();
  ctx->stages = {st};
  ctx->settings.heartbeat_rate = 1s;
  ctx->settings.heartbeat_extension = 30s;
  auto workers = cpu_pool_size(0);
  auto pool = spawn_cpu_pool(sys, workers, 1000, ctx->admission);
  auto executor = make_cpu_executor(pool);
  local_transcriber ocr{*executor};
  auto hb = spawn_heartbeat(sys, ctx);
  // The jobs' side: told nothing, as no claim is lost.
  auto stub = sys.spawn([] {
    return caf::behavior{[](lost_atom, std::string&) {}, [](cancel_atom) {}, [](stop_atom) {}};
  });
  for (int i = 0; i < 200; ++i) {
    claim_ref ref{uuid::v7(), uuid::v7()};
    caf::anon_send(hb, track_atom_v,
                   tracked_claim{"r" + std::to_string(i), ref, stub,
                                 std::chrono::steady_clock::now(), st, uuid::v7(), uuid::v4()});
  }

  // Keep every CPU worker busy with a standing backlog of OCR work.
  std::atomic<int> in_flight{0};
  std::atomic<int> pages{0};
  std::atomic<bool> stop{false};
  std::thread feeder{[&] {
    while (!stop) {
      while (in_flight < workers * 3) {
        ++in_flight;
        ocr.transcribe(transcription_request{bytes, "image/png", 0.0, false},
                       [&](result<transcription> r) {
                         if (r)
                           pages += r->page_count;
                         --in_flight;
                       });
      }
      std::this_thread::sleep_for(10ms); // a feeding period, not a wait for a result
    }
  }};
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds{seconds});
  stop = true;
  feeder.join();
  auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto [p50, ticks] = ctx->metrics->heartbeat_lateness_quantile(0.5);
  auto p99 = ctx->metrics->heartbeat_lateness_quantile(0.99).first;
  auto max = ctx->metrics->heartbeat_lateness_quantile(1.0).first;
  std::printf("cpu pool: %d workers, %d pages OCR'd in %.1f s (%.2f pages/s)\n", workers,
              pages.load(), elapsed, pages.load() / elapsed);
  std::printf(
      "heartbeat: %llu ticks of 1 s with 200 claims each; lateness p50 <= %.3f s, p99 <= %.3f s, "
      "max <= %.3f s (histogram bucket bounds)\n",
      static_cast<unsigned long long>(ticks), p50, p99, max);
  while (in_flight > 0)
    std::this_thread::sleep_for(50ms); // drain the OCR still running before the pool stops
  caf::anon_send_exit(hb, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(stub, caf::exit_reason::user_shutdown);
  return 0;
}
