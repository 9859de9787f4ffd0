// Size classes against one queue (seed 004): the embedded worker (actors/worker.hpp) with the
// test fakes for queue, database and storage, and a transcriber whose work runs on a pool of
// `--cores` threads, FIFO as the CPU pool: a small document is instant, a large one holds its core
// for `--large-ms`. Documents arrive at `--rate` per second, `--large-percent` of them large, for
// `--seconds`; the figure is the latency (arrival to completion) of the small ones, p50/p95/p99.
//
//   without classes: one queue, every job weight 1, worker.max_in_flight = --slots
//   with classes:    small and large queues, worker.capacity_slots = --slots, small weight 1,
//                    large weight 5 (one large job at a time with 6 slots)
//
//   bench_scheduling [--cores 2] [--rate 7] [--seconds 30] [--large-percent 10] [--large-ms 2000] [--slots 6]
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include "actors/ingest_job.hpp"
#include "actors/worker.hpp"
#include "tests/support/fakes/fakes.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

/// The machine's cores: work items run FIFO on `n` threads, as on the CPU pool.
class cores {
public:
  explicit cores(int n) {
    for (int i = 0; i < n; ++i)
      threads_.emplace_back([this] { run(); });
  }
  ~cores() {
    {
      std::lock_guard g{mtx_};
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
      t.join();
  }
  cores(const cores&) = delete;
  cores& operator=(const cores&) = delete;
  void submit(std::function<void()> fn) {
    {
      std::lock_guard g{mtx_};
      work_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }

private:
  void run() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock g{mtx_};
        cv_.wait(g, [this] { return stop_ || !work_.empty(); });
        if (work_.empty())
          return;
        fn = std::move(work_.front());
        work_.pop_front();
      }
      fn();
    }
  }
  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> work_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

/// A document whose text is "large" holds a core for `large`; any other is instant.
class core_transcriber : public transcriber {
public:
  core_transcriber(cores& c, std::chrono::milliseconds large) : cores_(c), large_(large) {}
  void transcribe(transcription_request request, callback<transcription> done) override {
    cores_.submit([bytes = std::move(request.bytes), done = std::move(done), large = large_] {
      if (bytes == "large")
        std::this_thread::sleep_for(large);
      transcription t;
      t.text = "INVOICE INV-1\nAcme Inc.\nTotal 119.00 EUR\n";
      t.quality_score = 0.95;
      t.provider = "bench";
      done(std::move(t));
    });
  }
  std::string name() const override { return "bench"; }

private:
  cores& cores_;
  std::chrono::milliseconds large_;
};

struct options {
  int cores = 2;
  double rate = 7;
  int seconds = 30;
  int large_percent = 10;
  int large_ms = 2000;
  int slots = 6;
};

struct figures {
  double p50 = 0, p95 = 0, p99 = 0, large_p50 = 0;
  size_t small = 0, large = 0;
};

double quantile(std::vector<double> v, double q) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

figures run(const options& o, bool classes) {
  caf::actor_system_config cfg;
  configure_scheduler(cfg);
  caf::actor_system sys{cfg};
  cores machine{o.cores};
  auto small_q = std::make_shared<test::fake_queue>();
  auto large_q = std::make_shared<test::fake_queue>();
  auto store = std::make_shared<test::fake_store>();
  auto db = std::make_shared<test::fake_repository>();
  store->set("small", "small");
  store->set("large", "large");

  std::mutex mtx;
  std::map<uuid, clock_type::time_point> arrived;
  std::map<uuid, bool> is_large;
  std::vector<double> small_latency, large_latency;
  size_t completed = 0;

  auto ctx = std::make_shared<worker_context>();
  ctx->ports.ingest_queue = small_q;
  ctx->ports.storage = store;
  ctx->ports.db = db;
  ctx->ports.ocr = std::make_shared<core_transcriber>(machine, std::chrono::milliseconds{o.large_ms});
  ctx->ports.extract = std::make_shared<test::fake_extractor>();
  ctx->settings.worker_id = "bench";
  ctx->settings.wait_time = 1s;
  ctx->settings.heartbeat_actors = 1;
  ctx->observer = [&](const job_outcome& out) {
    auto now = clock_type::now();
    std::lock_guard g{mtx};
    if (out.result != job_result::completed)
      return;
    auto secs = std::chrono::duration<double>(now - arrived[out.ingestion_id]).count();
    (is_large[out.ingestion_id] ? large_latency : small_latency).push_back(secs);
    ++completed;
  };
  if (classes) {
    ctx->ports.large_ingest_queue = large_q;
    ctx->settings.capacity_slots = o.slots;
    size_class_settings s{"small", small_q, "small", 1, 300s, 300s, large_q, 2, 0};
    size_class_settings l{"large", large_q, "large", 5, 1800s, 1800s, nullptr, 2, 0};
    ctx->stages = {make_ingest_class_stage(*ctx, s), make_ingest_class_stage(*ctx, l)};
  } else {
    ctx->settings.max_in_flight = o.slots;
  }
  worker_options wo;
  wo.sweeper = false;
  auto w = start_worker(sys, ctx, wo);

  // Arrivals: a Poisson process at o.rate per second; intake routes by size.
  std::mt19937 rng{42};
  std::exponential_distribution<double> gap{o.rate};
  std::uniform_int_distribution<int> pct{0, 99};
  auto start = clock_type::now();
  auto next = start;
  size_t sent = 0;
  while (next - start < std::chrono::seconds{o.seconds}) {
    std::this_thread::sleep_until(next);
    bool large = pct(rng) < o.large_percent;
    auto id = db->add(large ? "large" : "small");
    {
      std::lock_guard g{mtx};
      arrived[id] = clock_type::now();
      is_large[id] = large;
    }
    if (large && classes) {
      db->set_size_class(id, "large");
      large_q->push(id.str());
      large_q->deliver_pending();
    } else {
      small_q->push(id.str());
      small_q->deliver_pending();
    }
    ++sent;
    next += std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(gap(rng)));
  }
  // Until everything is done (the fake queue's long polls wait for a push: end them).
  for (;;) {
    {
      std::lock_guard g{mtx};
      if (completed >= sent)
        break;
    }
    small_q->end_waits();
    large_q->end_waits();
    std::this_thread::sleep_for(50ms);
  }
  caf::anon_send(w.coordinator, shutdown_atom_v);
  for (int i = 0; i < 100; ++i) {
    small_q->end_waits();
    large_q->end_waits();
    std::this_thread::sleep_for(20ms);
  }
  figures f;
  std::lock_guard g{mtx};
  f.small = small_latency.size();
  f.large = large_latency.size();
  f.p50 = quantile(small_latency, 0.50);
  f.p95 = quantile(small_latency, 0.95);
  f.p99 = quantile(small_latency, 0.99);
  f.large_p50 = quantile(large_latency, 0.50);
  return f;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    double v = std::atof(argv[i + 1]);
    if (k == "--cores") o.cores = static_cast<int>(v);
    else if (k == "--rate") o.rate = v;
    else if (k == "--seconds") o.seconds = static_cast<int>(v);
    else if (k == "--large-percent") o.large_percent = static_cast<int>(v);
    else if (k == "--large-ms") o.large_ms = static_cast<int>(v);
    else if (k == "--slots") o.slots = static_cast<int>(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::printf("mix: %d%% large (%d ms on a core), the rest instant; %.1f documents/s for %d s on %d cores; %d slots\n",
              o.large_percent, o.large_ms, o.rate, o.seconds, o.cores, o.slots);
  for (bool classes : {false, true}) {
    auto f = run(o, classes);
    std::printf("%-16s small p50 %7.3f s  p95 %7.3f s  p99 %7.3f s  (%zu small, %zu large; large p50 %.3f s)\n",
                classes ? "with classes" : "without classes", f.p50, f.p95, f.p99, f.small, f.large, f.large_p50);
    std::fflush(stdout);
  }
  return 0;
}
