// Size classes against one queue: a node embedded in this process (actors/node.hpp: start_node
// with the ingest stage of stages/ingest) over in-memory queues, claimed-work and ingest
// repositories and storage, and a transcriber whose work runs on a pool of `--cores` threads,
// FIFO as the CPU pool: a small document is instant, a large one holds its core for `--large-ms`.
// Documents arrive at `--rate` per second, `--large-percent` of them large, for `--seconds`; the
// figure is the latency (arrival to completion) of the small ones, p50/p95/p99.
//
//   without classes: one queue, every job weight 1, worker.max_in_flight = --slots
//   with classes:    small and large queues, worker.capacity_slots = --slots, small weight 1,
//                    large weight 5 (one large job at a time with 6 slots)
//
//   bench_scheduling [--cores 2] [--rate 7] [--seconds 30] [--large-percent 10] [--large-ms 2000]
//   [--slots 6]
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include "actors/node.hpp"
#include "bench/support/memory_store.hpp"
#include "stages/ingest/ingest_stage.hpp"

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

/// A queue in memory with SQS's semantics as far as the node uses them: receipts, visibility
/// (a give-back makes a message visible again), and long polls that a push answers at once or
/// that end empty after their wait.
class memory_queue : public queue {
public:
  memory_queue() : timer_{[this] { expire_polls(); }} {}
  ~memory_queue() override {
    {
      std::lock_guard g{mtx_};
      stop_ = true;
    }
    cv_.notify_all();
    timer_.join();
    // Polls still parked answer empty, as a queue that goes away does.
    for (auto& p : parked_)
      p.done(std::vector<queue_message>{});
  }
  memory_queue(const memory_queue&) = delete;
  memory_queue& operator=(const memory_queue&) = delete;

  void push(const std::string& body) {
    std::vector<parked> answer;
    {
      std::lock_guard g{mtx_};
      visible_.push_back(entry{std::to_string(++ids_), body});
      answer = take_answerable();
    }
    for (auto& a : answer)
      a.done(std::move(a.got));
  }

  void receive(int max_messages, std::chrono::seconds wait, std::chrono::seconds,
               callback<std::vector<queue_message>> done) override {
    std::vector<queue_message> got;
    {
      std::lock_guard g{mtx_};
      if (visible_.empty() && wait.count() > 0 && !stop_) {
        parked_.push_back(parked{max_messages, clock_type::now() + wait, std::move(done), {}});
        cv_.notify_all();
        return;
      }
      got = take(max_messages);
    }
    done(std::move(got));
  }

  void remove(std::vector<std::string> receipts,
              callback<std::vector<batch_entry_result>> done) override {
    std::vector<batch_entry_result> out;
    {
      std::lock_guard g{mtx_};
      for (auto& r : receipts) {
        in_flight_.erase(r);
        out.push_back(batch_entry_result{r});
      }
    }
    done(std::move(out));
  }

  void change_visibility(std::vector<visibility_change> changes,
                         callback<std::vector<batch_entry_result>> done) override {
    std::vector<batch_entry_result> out;
    std::vector<parked> answer;
    {
      std::lock_guard g{mtx_};
      for (auto& c : changes) {
        out.push_back(batch_entry_result{c.receipt});
        auto i = in_flight_.find(c.receipt);
        if (i == in_flight_.end() || c.timeout.count() > 0)
          continue; // kept invisible: nothing here runs out (the bench ends first)
        visible_.push_front(i->second);
        in_flight_.erase(i);
      }
      answer = take_answerable();
    }
    for (auto& a : answer)
      a.done(std::move(a.got));
    done(std::move(out));
  }

  void send(std::vector<outgoing_message> messages,
            callback<std::vector<batch_entry_result>> done) override {
    std::vector<batch_entry_result> out;
    for (auto& m : messages) {
      push(m.body);
      out.push_back(batch_entry_result{});
    }
    done(std::move(out));
  }

  void stats(callback<queue_stats> done) override {
    queue_stats st;
    {
      std::lock_guard g{mtx_};
      st.visible = static_cast<int64_t>(visible_.size());
      st.in_flight = static_cast<int64_t>(in_flight_.size());
    }
    done(st);
  }

  std::string name() const override { return "memory"; }

private:
  struct entry {
    std::string id;
    std::string body;
  };
  struct parked {
    int max;
    clock_type::time_point until;
    callback<std::vector<queue_message>> done;
    std::vector<queue_message> got;
  };

  std::vector<queue_message> take(int max) {
    std::vector<queue_message> got;
    while (!visible_.empty() && static_cast<int>(got.size()) < std::max(max, 1)) {
      auto e = visible_.front();
      visible_.pop_front();
      auto receipt = e.id + "." + std::to_string(++receipts_);
      in_flight_[receipt] = e;
      queue_message m;
      m.id = e.id;
      m.receipt = receipt;
      m.body = e.body;
      m.receive_count = 1;
      got.push_back(std::move(m));
    }
    return got;
  }

  /// Parked polls that messages can answer now, with their messages (under the lock).
  std::vector<parked> take_answerable() {
    std::vector<parked> out;
    while (!parked_.empty() && !visible_.empty()) {
      auto p = std::move(parked_.front());
      parked_.pop_front();
      p.got = take(p.max);
      out.push_back(std::move(p));
    }
    return out;
  }

  void expire_polls() {
    std::unique_lock g{mtx_};
    while (!stop_) {
      cv_.wait_for(g, std::chrono::milliseconds{50});
      auto now = clock_type::now();
      std::vector<parked> expired;
      for (auto i = parked_.begin(); i != parked_.end();) {
        if (i->until <= now) {
          expired.push_back(std::move(*i));
          i = parked_.erase(i);
        } else {
          ++i;
        }
      }
      g.unlock();
      for (auto& p : expired)
        p.done(std::vector<queue_message>{});
      g.lock();
    }
  }

  std::mutex mtx_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t ids_ = 0, receipts_ = 0;
  std::deque<entry> visible_;
  std::map<std::string, entry> in_flight_;
  std::deque<parked> parked_;
  std::thread timer_;
};

/// Work items and ingestions in memory: the claimed-work port and the ingest stage's port over
/// one table. Every document is a text file named after its kind ("small" or "large"), which is
/// also its content (the storage below).
class memory_database : public work_repository, public ingest_repository {
public:
  uuid add(const std::string& kind, const std::string& size_class) {
    std::lock_guard g{mtx_};
    auto id = uuid::v7();
    items_[id] = item{kind, size_class, "in-progress", {}};
    return id;
  }

  void claim(std::vector<claim_request> requests, std::string, std::chrono::seconds,
             callback<std::vector<claim_answer>> done) override {
    std::vector<claim_answer> out;
    {
      std::lock_guard g{mtx_};
      for (auto& r : requests) {
        claim_answer a;
        auto i = items_.find(r.item);
        if (i == items_.end() || r.stage != "ingest") {
          a.outcome = claim_outcome::unknown;
        } else if (i->second.status != "in-progress") {
          a.outcome = claim_outcome::finished;
        } else if (!r.size_class.empty() && i->second.size_class != r.size_class) {
          a.outcome = claim_outcome::moved;
        } else if (!i->second.token.is_nil()) {
          a.outcome = claim_outcome::held;
        } else {
          i->second.token = r.token;
          a.outcome = claim_outcome::granted;
          a.work.item = r.item;
          a.work.token = r.token;
          a.work.document_id = r.item;
          a.work.tenant_id = r.item;
          a.work.size_class = i->second.size_class;
        }
        out.push_back(std::move(a));
      }
    }
    done(std::move(out));
  }
  void renew_leases(std::vector<claim_ref> refs, std::chrono::seconds,
                    callback<std::vector<claim_ref>> done) override {
    std::vector<claim_ref> lost;
    {
      std::lock_guard g{mtx_};
      for (auto& r : refs)
        if (!holds(r))
          lost.push_back(r);
    }
    done(std::move(lost));
  }
  void cancel_requests(std::vector<uuid>, callback<std::vector<uuid>> done) override {
    done(std::vector<uuid>{});
  }
  void complete(std::vector<work_outcome> outcomes,
                callback<std::vector<result<void>>> done) override {
    std::vector<result<void>> out;
    {
      std::lock_guard g{mtx_};
      for (auto& o : outcomes)
        out.push_back(finish(o.ref, "completed"));
    }
    done(std::move(out));
  }
  void record_failure(claim_ref ref, failure_record record, std::chrono::seconds,
                      std::vector<audit_event>, callback<failure_outcome> done) override {
    failure_outcome f;
    {
      std::lock_guard g{mtx_};
      if (!holds(ref))
        return done(error::make_claim_lost("record_failure: claim lost"));
      auto& it = items_[ref.item];
      it.token = uuid{};
      f.attempt_count = ++it.attempts;
      if (record.move) {
        it.size_class = record.move->size_class;
      } else if (record.error.permanent() || f.attempt_count >= record.max_attempts) {
        it.status = "failed";
        f.failed = true;
      }
    }
    done(f);
  }
  void release(claim_ref ref, std::chrono::seconds, std::vector<audit_event>,
               callback<void> done) override {
    {
      std::lock_guard g{mtx_};
      if (holds(ref))
        items_[ref.item].token = uuid{};
    }
    done(result<void>{});
  }
  void record_cancelled(claim_ref ref, std::vector<audit_event>, callback<void> done) override {
    {
      std::lock_guard g{mtx_};
      (void)finish(ref, "cancelled");
    }
    done(result<void>{});
  }
  void append_audit(std::vector<audit_event>, callback<void> done) override {
    done(result<void>{});
  }
  void revive(revive_request, callback<int64_t> done) override { done(int64_t{0}); }

  void load(uuid id, callback<ingestion_details> done) override {
    ingestion_details d;
    {
      std::lock_guard g{mtx_};
      auto i = items_.find(id);
      if (i == items_.end())
        return done(error::make_permanent("ingest.unknown", "no ingestion " + id.str()));
      d.file_path = i->second.kind;
      d.mime_type = "text/plain";
    }
    done(std::move(d));
  }
  void record_transcription(claim_ref ref, transcription_record, callback<void> done) override {
    bool held;
    {
      std::lock_guard g{mtx_};
      held = holds(ref);
    }
    done(held ? result<void>{}
              : result<void>{error::make_claim_lost("record_transcription: claim lost")});
  }
  void keep_output(claim_ref, std::string, callback<void> done) override { done(result<void>{}); }
  void complete(std::vector<ingest_completion> completions,
                callback<std::vector<result<void>>> done) override {
    std::vector<result<void>> out;
    {
      std::lock_guard g{mtx_};
      for (auto& c : completions)
        out.push_back(finish(c.work.ref, "completed"));
    }
    done(std::move(out));
  }

private:
  struct item {
    std::string kind;
    std::string size_class;
    std::string status;
    uuid token;
    int32_t attempts = 0;
  };

  bool holds(const claim_ref& ref) const {
    auto i = items_.find(ref.item);
    return i != items_.end() && i->second.status == "in-progress" && i->second.token == ref.token;
  }

  result<void> finish(const claim_ref& ref, const char* status) {
    if (!holds(ref))
      return error::make_claim_lost(std::string{"complete: claim of "} + ref.item.str() + " lost");
    auto& it = items_[ref.item];
    it.status = status;
    it.token = uuid{};
    return {};
  }

  std::mutex mtx_;
  std::map<uuid, item> items_;
};

/// Instant extraction: a valid invoice the quality gate passes.
class instant_extractor : public extractor {
public:
  void extract(std::string, callback<extraction> done) override {
    extraction x;
    x.structured_data
        = R"({"invoice_number":"INV-1","invoice_date":"2026-01-15","due_date":null,)"
          R"("supplier_name":"ACME GmbH","supplier_address":null,"supplier_vat_id":null,)"
          R"("customer_name":null,"currency":"EUR","line_items":[],"subtotal":100.0,)"
          R"("vat_amount":19.0,"total":119.0,"extraction_successful":true,)"
          R"("confidence":"high","missing_fields":[]})";
    x.extraction_successful = true;
    x.confidence = "high";
    x.model = "instant";
    done(std::move(x));
  }
  std::string name() const override { return "instant"; }
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
  auto small_q = std::make_shared<memory_queue>();
  auto large_q = std::make_shared<memory_queue>();
  auto db = std::make_shared<memory_database>();

  std::mutex mtx;
  std::map<uuid, clock_type::time_point> arrived;
  std::map<uuid, bool> is_large;
  std::vector<double> small_latency, large_latency;
  size_t completed = 0;

  auto ports = std::make_shared<ingest_ports>();
  ports->db = db;
  // A document's key is its content ("small" or "large"); stored transcriptions are kept.
  ports->storage = std::make_shared<bench::memory_store>(
      [](const std::string& key) -> std::optional<std::string> {
        if (key == "small" || key == "large")
          return key;
        return std::nullopt;
      });
  ports->ocr = std::make_shared<core_transcriber>(machine, std::chrono::milliseconds{o.large_ms});
  ports->extract = std::make_shared<instant_extractor>();
  auto ctx = std::make_shared<node_context>();
  ctx->work = db;
  ctx->settings.worker_id = "bench";
  ctx->settings.wait_time = 1s;
  ctx->settings.heartbeat_actors = 1;
  ctx->observer = [&](const job_outcome& out) {
    auto now = clock_type::now();
    std::lock_guard g{mtx};
    if (out.result != job_result::completed)
      return;
    auto secs = std::chrono::duration<double>(now - arrived[out.item]).count();
    (is_large[out.item] ? large_latency : small_latency).push_back(secs);
    ++completed;
  };
  if (classes) {
    ctx->settings.capacity_slots = o.slots;
    ingest_class s{"small", small_q, "small", 1, 300s, 300s, "large", 2, 0};
    ingest_class l{"large", large_q, "large", 5, 1800s, 1800s, "", 2, 0};
    ctx->stages = {make_ingest_stage(ports, ingest_settings{}, s),
                   make_ingest_stage(ports, ingest_settings{}, l)};
  } else {
    ctx->settings.max_in_flight = o.slots;
    ingest_class one;
    one.queue = small_q;
    one.queue_name = "small";
    ctx->stages = {make_ingest_stage(ports, ingest_settings{}, one)};
  }
  node_options no;
  no.sweeper = false;
  std::promise<void> stopped;
  no.on_stopped = [&] { stopped.set_value(); };
  auto w = start_node(sys, ctx, no);

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
    // Intake routes by size: the large class's work item and queue with classes.
    auto id = db->add(large ? "large" : "small", large && classes ? "large" : "small");
    {
      std::lock_guard g{mtx};
      arrived[id] = clock_type::now();
      is_large[id] = large;
    }
    (large && classes ? large_q : small_q)->push(id.str());
    ++sent;
    next += std::chrono::duration_cast<clock_type::duration>(
        std::chrono::duration<double>(gap(rng)));
  }
  // Until everything is done.
  for (;;) {
    {
      std::lock_guard g{mtx};
      if (completed >= sent)
        break;
    }
    std::this_thread::sleep_for(50ms); // polling the bench's own counter, not a wait for timing
  }
  caf::anon_send(w.coordinator, shutdown_atom_v);
  stopped.get_future().wait_for(std::chrono::seconds{60});
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
    if (k == "--cores")
      o.cores = static_cast<int>(v);
    else if (k == "--rate")
      o.rate = v;
    else if (k == "--seconds")
      o.seconds = static_cast<int>(v);
    else if (k == "--large-percent")
      o.large_percent = static_cast<int>(v);
    else if (k == "--large-ms")
      o.large_ms = static_cast<int>(v);
    else if (k == "--slots")
      o.slots = static_cast<int>(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::printf("mix: %d%% large (%d ms on a core), the rest instant; %.1f documents/s for %d s on "
              "%d cores; %d slots\n",
              o.large_percent, o.large_ms, o.rate, o.seconds, o.cores, o.slots);
  for (bool classes : {false, true}) {
    auto f = run(o, classes);
    std::printf("%-16s small p50 %7.3f s  p95 %7.3f s  p99 %7.3f s  (%zu small, %zu large; large "
                "p50 %.3f s)\n",
                classes ? "with classes" : "without classes", f.p50, f.p95, f.p99, f.small, f.large,
                f.large_p50);
    std::fflush(stdout);
  }
  return 0;
}
