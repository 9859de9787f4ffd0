// Measures the Postgres-backed queue: send rate (batches of 10) and receive + delete rate
// (batch 10) with 1..N concurrent consumers, each its own adapter, on a fresh migrated schema
// with the queue registered as `ingestd queues create` does; each run twice: messages without a
// tenant, then each of one of 10 tenants (fair shares between tenants, migration 019).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "adapters/queue/postgres_queue.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

template <class T, class Start>
result<T> call(Start&& start) {
  std::promise<result<T>> promise;
  auto future = promise.get_future();
  start([&](result<T> r) { promise.set_value(std::move(r)); });
  return future.get();
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Sends `count` messages in batches of `batch` from `senders` threads, message i of tenant
/// i % `tenants` (none when 0); returns messages/s.
double fill(const std::string& url, const std::string& name, int count, int batch, int senders,
            int tenants) {
  std::atomic<int> next{0};
  auto t0 = clock_type::now();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(senders));
  for (int s = 0; s < senders; ++s)
    threads.emplace_back([&] {
      postgres_queue q{url, name, {1}};
      for (;;) {
        auto start = next.fetch_add(batch);
        if (start >= count)
          return;
        std::vector<outgoing_message> msgs;
        for (int i = start; i < std::min(count, start + batch); ++i) {
          msgs.push_back({"01936c2e-0000-7000-8000-" + std::to_string(100000000000 + i), 0s});
          if (tenants > 0)
            msgs.back().tenant
                = "01936c2e-0000-7000-8000-" + std::to_string(200000000000 + i % tenants);
        }
        auto res = call<std::vector<batch_entry_result>>([&](auto cb) { q.send(msgs, cb); });
        if (!res) {
          std::fprintf(stderr, "send failed: %s\n", res.error().describe().c_str());
          std::exit(1);
        }
      }
    });
  for (auto& t : threads)
    t.join();
  return count / seconds_since(t0);
}

/// Drains the queue with `consumers` adapters, receive(10) + remove per batch; returns msgs/s.
double drain(const std::string& url, const std::string& name, int count, int consumers) {
  std::atomic<int> done{0};
  std::atomic<int64_t> finished_ns{0};
  auto t0 = clock_type::now();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(consumers));
  for (int c = 0; c < consumers; ++c)
    threads.emplace_back([&] {
      postgres_queue q{url, name, {1}};
      while (done.load() < count) {
        auto got = call<std::vector<queue_message>>([&](auto cb) { q.receive(10, 1s, 60s, cb); });
        if (!got) {
          std::fprintf(stderr, "receive failed: %s\n", got.error().describe().c_str());
          std::exit(1);
        }
        if (got->empty())
          continue;
        std::vector<std::string> receipts;
        for (auto& m : *got)
          receipts.push_back(m.receipt);
        auto del = call<std::vector<batch_entry_result>>([&](auto cb) { q.remove(receipts, cb); });
        if (!del) {
          std::fprintf(stderr, "delete failed: %s\n", del.error().describe().c_str());
          std::exit(1);
        }
        if (done.fetch_add(static_cast<int>(receipts.size())) + static_cast<int>(receipts.size())
            >= count)
          finished_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - t0)
                            .count();
      }
    });
  for (auto& t : threads)
    t.join();
  return count / (static_cast<double>(finished_ns.load()) / 1e9);
}

} // namespace

int main(int argc, char** argv) {
  int count = argc > 1 ? std::atoi(argv[1]) : 20000;
  if (count <= 0) {
    std::fprintf(stderr, "usage: bench_pg_queue [MESSAGES [CONSUMERS...]]\n");
    return 2;
  }
  try {
    std::printf("bench_pg_queue: %d messages per run, batch 10, %u hardware threads, database %s\n",
                count, std::thread::hardware_concurrency(),
                std::getenv("INGESTD_TEST_DATABASE_URL") ? std::getenv("INGESTD_TEST_DATABASE_URL")
                                                         : "(unset)");
    std::vector<int> runs{1, 2, 4, 8};
    if (argc > 2) {
      runs.clear();
      for (int i = 2; i < argc; ++i)
        runs.push_back(std::max(1, std::atoi(argv[i])));
    }
    for (int consumers : runs)
      for (int tenants : {0, 10}) {
        ingestd::test::pg_schema db;
        auto name = std::string{"bench"};
        if (auto made = create_postgres_queue(db.url(), name, "", 0); !made)
          throw std::runtime_error(made.error().describe());
        auto send_rate = fill(db.url(), name, count, 10, consumers, tenants);
        db.query("ANALYZE queue_message");
        auto rate = drain(db.url(), name, count, consumers);
        auto left = db.scalar("SELECT count(*) FROM queue_message");
        std::printf("consumers %d, %-10s send %8.0f msg/s (batch 10, %d senders)   "
                    "receive+delete %8.0f msg/s (batch 10)   left %s\n",
                    consumers, tenants > 0 ? "10 tenants:" : "no tenant:", send_rate, consumers,
                    rate, left.c_str());
        std::fflush(stdout);
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_pg_queue: %s\n", e.what());
    return 1;
  }
  return 0;
}
