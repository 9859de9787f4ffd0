// 1,000 concurrent requests to a local slow server (each answered after ~1 s)
// all succeed within a few seconds, carried by the engine's one thread; a burst over TLS to a
// server that speaks HTTP/2, as hosted providers do, shares a few connections.
#include <gtest/gtest.h>

#include <dirent.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "adapters/http/curl_engine.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/http/connections.hpp"
#include "tests/support/http/http_call.hpp"
#include "tests/support/http/local_http_server.hpp"
#include "tests/support/http/tls_front.hpp"

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

/// The outcomes that are 200 "ok"; every failure is reported.
size_t answered_ok(const test::http_collector& collector) {
  size_t ok = 0;
  for (const auto& o : collector.outcomes()) {
    if (o.res->ok() && o.res->value().status == 200 && o.res->value().body == "ok")
      ++ok;
    else if (!o.res->ok())
      ADD_FAILURE() << o.res->error().describe();
  }
  return ok;
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

// 300 slow requests at once to one https host that speaks HTTP/2 (half of them spelling the scheme
// in upper case): they go as streams over a connection per lane of the engine (it waits for a
// connection to say that it multiplexes instead of opening one, with its TLS session, per request).
TEST(http_concurrency, a_burst_over_tls_to_an_http2_server_shares_a_few_connections) {
  constexpr size_t n = 300;
  auto dir = test::make_temp_dir("ingestd_h2");
  auto [cert, key] = test::make_self_signed_cert(dir);
  test::local_http_server backend;
  test::tls_front front(backend.port(), cert, key);
  test::http_collector collector;
  curl_engine engine({.ca_file = cert});

  std::atomic<bool> sampling{true};
  std::atomic<int> max_connections{0};
  std::thread sampler([&] {
    while (sampling.load()) {
      max_connections = std::max(max_connections.load(), test::connections_to(front.port()));
      std::this_thread::sleep_for(5ms); // a sampling period, not a wait for a condition
    }
  });
  for (size_t i = 0; i < n; ++i) {
    http_request r;
    r.url = front.base_url() + "/delay/1500";
    if (i % 2 == 1) // a scheme is case-insensitive: "HTTPS://" multiplexes as well
      r.url = "HTTPS" + r.url.substr(5);
    r.connect_timeout = 10s;
    r.total_timeout = 60s;
    engine.submit(std::move(r), collector.make_callback());
  }
  ASSERT_TRUE(collector.wait_for(n, 90s)) << "only " << collector.calls() << " of " << n;
  sampling = false;
  sampler.join();

  EXPECT_EQ(answered_ok(collector), n);
  EXPECT_EQ(engine.stats().peak_in_flight, n);
  // Every request was in flight at once (each answered 1.5 s later), on no more connections than
  // the engine has lanes; the sampler saw them.
  EXPECT_GE(max_connections.load(), 1);
  EXPECT_LE(max_connections.load(), curl_engine_options{}.lanes);
  std::filesystem::remove_all(dir);
}

// More https requests at once than a connection has streams (the front allows 100): they wait for
// a stream of the lane's bounded connections instead of opening a connection each, which libcurl
// did for every request of a burst that found the open connections full. Plain http requests, one
// a connection, are not held to that bound.
TEST(http_concurrency, a_burst_beyond_the_streams_of_a_connection_stays_within_the_https_bound) {
  constexpr size_t n = 600;
  auto dir = test::make_temp_dir("ingestd_h2_bound");
  auto [cert, key] = test::make_self_signed_cert(dir);
  test::local_http_server backend;
  test::tls_front front(backend.port(), cert, key);
  test::http_collector collector;
  curl_engine engine({.lanes = 2, .https_connections_per_host = 2, .ca_file = cert});

  std::atomic<bool> sampling{true};
  std::atomic<int> max_tls{0}, max_plain{0};
  std::thread sampler([&] {
    while (sampling.load()) {
      max_tls = std::max(max_tls.load(), test::connections_to(front.port()));
      max_plain = std::max(max_plain.load(), test::connections_to(backend.port()));
      std::this_thread::sleep_for(5ms); // a sampling period, not a wait for a condition
    }
  });
  for (size_t i = 0; i < 2 * n; ++i) {
    http_request r;
    r.url = (i % 2 == 0 ? front.base_url() : backend.base_url()) + "/delay/1500";
    r.connect_timeout = 10s;
    r.total_timeout = 60s;
    engine.submit(std::move(r), collector.make_callback());
  }
  ASSERT_TRUE(collector.wait_for(2 * n, 90s)) << "only " << collector.calls() << " of " << 2 * n;
  sampling = false;
  sampler.join();

  EXPECT_EQ(answered_ok(collector), 2 * n);
  EXPECT_GE(max_tls.load(), 1);
  EXPECT_LE(max_tls.load(), 2 * 2) << "2 lanes of at most 2 connections to the https host";
  EXPECT_GT(max_plain.load(), 100) << "plain http requests, a connection each, are not bounded";
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace ingestd
