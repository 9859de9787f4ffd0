// Benchmark of the HTTP engine: N concurrent requests to a local server that answers each after
// a delay, for a few rounds, on one curl_engine; prints throughput, wall time and memory. With a
// provider limit the requests go through rate_limited_client (the limits.* of a provider): it
// prints what the limit let through at most, the threads the process had while the requests
// waited in line, and their average wait.
//
//   bench_http_engine [--requests N=1000] [--rounds R=3] [--delay-ms D=1000]
//                     [--max-concurrent C=0] [--requests-per-minute M=0]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>

#include "adapters/http/curl_engine.hpp"
#include "adapters/http/rate_limited_client.hpp"
#include "bench/support/cpu_time.hpp"
#include "tests/support/http/http_call.hpp"
#include "tests/support/http/local_http_server.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

/// A "VmXXX:   1234 kB" field of /proc/self/status, in kB.
long proc_status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  auto prefix = std::string(field) + ":";
  while (std::getline(in, line))
    if (line.starts_with(prefix))
      return std::atol(line.c_str() + prefix.size());
  return -1;
}

long arg(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0)
      return std::atol(argv[i + 1]);
  return fallback;
}

} // namespace

static int run_bench(int argc, char** argv) {
  auto n = static_cast<size_t>(arg(argc, argv, "--requests", 1000));
  auto rounds = arg(argc, argv, "--rounds", 3);
  auto delay_ms = arg(argc, argv, "--delay-ms", 1000);
  if (std::getenv("INGESTD_SOURCE_DIR") == nullptr)
    setenv("INGESTD_SOURCE_DIR", INGESTD_SOURCE_DIR_DEFAULT, 0);
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max; // one socket per in-flight request
    setrlimit(RLIMIT_NOFILE, &lim);
  }

  test::local_http_server server;
  auto url = server.base_url() + "/delay/" + std::to_string(delay_ms);
  auto rss_before = proc_status_kb("VmRSS");
  curl_engine engine;
  provider_limits limits;
  limits.max_concurrent = static_cast<int>(arg(argc, argv, "--max-concurrent", 0));
  limits.requests_per_minute = static_cast<int>(arg(argc, argv, "--requests-per-minute", 0));
  limits.max_wait = std::chrono::hours{1};
  rate_limited_client limited{"bench", engine, engine, limits};
  http_client& client = limits.any() ? static_cast<http_client&>(limited) : engine;
  std::printf("bench_http_engine: %zu concurrent requests x %ld rounds, server delay %ld ms", n,
              rounds, delay_ms);
  if (limits.any())
    std::printf(", provider limit: %d at once, %d per minute", limits.max_concurrent,
                limits.requests_per_minute);
  std::printf("\n");
  long threads_waiting = 0;
  std::printf("RSS before the engine: %ld kB\n", rss_before);
  size_t total = 0;
  size_t failures = 0;
  auto all_start = std::chrono::steady_clock::now();
  auto cpu_start = bench::process_cpu_seconds();
  for (long round = 1; round <= rounds; ++round) {
    test::http_collector collector;
    auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) {
      http_request r;
      r.url = url;
      r.connect_timeout = 30s;
      r.total_timeout = 120s;
      client.submit(std::move(r), collector.make_callback());
    }
    auto rss_submitted = proc_status_kb("VmRSS");
    threads_waiting = std::max(threads_waiting, proc_status_kb("Threads"));
    if (!collector.wait_for(n, 300s)) {
      std::printf("round %ld: only %zu of %zu completed within 300 s\n", round, collector.calls(),
                  n);
      return 1;
    }
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    size_t failed = 0;
    for (const auto& o : collector.outcomes())
      if (!o.res->ok() || o.res->value().status != 200)
        ++failed;
    failures += failed;
    total += n;
    std::printf("round %ld: %zu requests in %.3f s = %.0f requests/s, %zu failed, "
                "RSS with all in flight %ld kB\n",
                round, n, wall, static_cast<double>(n) / wall, failed, rss_submitted);
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - all_start).count();
  double cpu = bench::process_cpu_seconds() - cpu_start;
  auto hwm = proc_status_kb("VmHWM");
  auto stats = engine.stats();
  std::printf("total: %zu requests, %zu failed, %.3f s wall, %.0f requests/s overall\n", total,
              failures, wall, static_cast<double>(total) / wall);
  std::printf("process CPU (engine thread + callbacks + submitting): %.3f s = %.0f us/request\n",
              cpu, cpu * 1e6 / static_cast<double>(total));
  std::printf("peak in flight: %llu\n", static_cast<unsigned long long>(stats.peak_in_flight));
  if (limits.any()) {
    auto s = limited.stats();
    std::printf("provider limit: %llu requests waited in line, %.3f s on average; process threads "
                "with every request submitted: %ld\n",
                static_cast<unsigned long long>(s.waited),
                s.waited > 0 ? s.wait_seconds / static_cast<double>(s.waited) : 0.0,
                threads_waiting);
  }
  std::printf("peak RSS (VmHWM): %ld kB; delta over the pre-engine RSS: %ld kB = %.1f kB per "
              "in-flight request\n",
              hwm, hwm - rss_before,
              static_cast<double>(hwm - rss_before) / static_cast<double>(stats.peak_in_flight));
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  // An unexpected failure (a server that cannot start, a missing file) ends the run with a
  // message instead of std::terminate.
  try {
    return run_bench(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_http_engine: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "bench_http_engine: unknown exception\n");
  }
  return 1;
}
