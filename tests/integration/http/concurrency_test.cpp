// 1,000 concurrent requests to a local slow server (each answered after ~1 s)
// all succeed within a few seconds, carried by the engine's one thread.
#include <gtest/gtest.h>

#include <dirent.h>

#include <atomic>
#include <thread>

#include "adapters/http/curl_engine.hpp"
#include "tests/support/http/http_call.hpp"
#include "tests/support/http/local_http_server.hpp"

namespace ingestd {
namespace {

using namespace std::chrono_literals;

/// Threads of this process, from /proc/self/task.
int thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.')
        ++n;
    closedir(d);
  }
  return n;
}

TEST(http_concurrency, thousand_slow_requests_complete_in_seconds_on_one_engine_thread) {
  constexpr size_t n = 1000;
  test::local_http_server server;
  test::http_collector collector;
  auto threads_before = thread_count();
  curl_engine engine;
  EXPECT_EQ(thread_count(), threads_before + 1) << "the engine must add exactly one thread";

  // Sample the thread count while the requests are in flight.
  std::atomic<bool> sampling{true};
  std::atomic<int> max_threads{0};
  std::thread sampler([&] {
    while (sampling.load()) {
      max_threads = std::max(max_threads.load(), thread_count());
      std::this_thread::sleep_for(5ms); // a sampling period, not a wait for a condition
    }
  });

  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    http_request r;
    r.url = server.base_url() + "/delay/1000";
    r.connect_timeout = 10s;
    r.total_timeout = 30s;
    engine.submit(std::move(r), collector.make_callback());
  }
  ASSERT_TRUE(collector.wait_for(n, 60s)) << "only " << collector.calls() << " of " << n;
  auto wall = std::chrono::steady_clock::now() - start;
  sampling = false;
  sampler.join();

  size_t succeeded = 0;
  for (const auto& o : collector.outcomes()) {
    EXPECT_EQ(o.calls, 1);
    EXPECT_EQ(o.thread, engine.thread_id());
    if (o.res->ok() && o.res->value().status == 200 && o.res->value().body == "ok")
      ++succeeded;
    else if (!o.res->ok())
      ADD_FAILURE() << o.res->error().describe();
  }
  EXPECT_EQ(succeeded, n);
  auto seconds = std::chrono::duration<double>(wall).count();
  EXPECT_LT(seconds, 15.0);
  EXPECT_GE(seconds, 0.9); // the server really delayed each answer
  // The sampler itself is one extra thread; beyond it, only the engine's.
  EXPECT_EQ(max_threads.load(), threads_before + 2);
  EXPECT_EQ(engine.stats().peak_in_flight, n);
  std::printf("%zu requests of 1 s each: %.2f s wall, %.0f requests/s\n", n, seconds,
              static_cast<double>(n) / seconds);
}

} // namespace
} // namespace ingestd
