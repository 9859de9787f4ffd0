// Recovery after kill -9 with the default lease, heartbeat and visibility: for each round a fresh
// schema and queue, two idle nodes, one one-page scan: the node that claims it is killed at once
// (it is fetching or transcribing), the other is idle. Prints the time from the kill to the other
// node's claim and to the document's completion, per round, then the median and the worst.
//   bench_recovery [ROUNDS]   (default 20; needs the local stack's environment and INGESTD_BINARY
//                              or the built ingestd)
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/daemon/e2e_setup.hpp"

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using ingestd::test::doc_kind;
using ingestd::test::e2e_setup;

namespace {

// Waits until `condition` holds or `deadline` passes; true when it held.
template <class F>
bool wait_for(F&& condition, std::chrono::seconds deadline) {
  auto end = clock_type::now() + deadline;
  while (clock_type::now() < end) {
    if (condition())
      return true;
    std::this_thread::sleep_for(50ms);
  }
  return condition();
}

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

struct round_result {
  double claimed = 0;
  double completed = 0;
};

// The configuration's defaults for everything recovery depends on (the e2e setup shortens them).
std::map<std::string, std::string> defaults(const std::string& node) {
  return {{"INGESTD_WORKER__ID", node},
          {"INGESTD_WORKER__LEASE_SECONDS", "15"},
          {"INGESTD_WORKER__HEARTBEAT_RATE_SECONDS", "0"},
          {"INGESTD_WORKER__HEARTBEAT_EXTENSION_SECONDS", "0"},
          {"INGESTD_QUEUE__VISIBILITY_TIMEOUT_SECONDS", "0"},
          {"INGESTD_QUEUE__WAIT_TIME_SECONDS", "20"},
          {"INGESTD_WORKER__SWEEPER_INTERVAL_SECONDS", "60"}};
}

std::optional<round_result> run_round(int round) {
  e2e_setup s;
  auto ids = s.add_documents(1, doc_kind::scan_png);
  const std::string claimed_by = "SELECT count(*) FROM work_item WHERE id = $1::uuid AND "
                                 "claim_token IS NOT NULL AND claimed_by = $2";
  auto b = s.start(defaults("recovery-b"));
  // B is up and idle (registered in the node registry) before A starts and the work arrives.
  if (!wait_for(
          [&] { return s.count("SELECT count(*) FROM worker_node WHERE id = 'recovery-b'") == 1; },
          60s)) {
    std::fprintf(stderr, "round %d: node B did not start\n%s\n", round, s.logs().c_str());
    return std::nullopt;
  }
  auto a = s.start(defaults("recovery-a"));
  if (!wait_for(
          [&] { return s.count("SELECT count(*) FROM worker_node WHERE id = 'recovery-a'") == 1; },
          60s)) {
    std::fprintf(stderr, "round %d: node A did not start\n%s\n", round, s.logs().c_str());
    return std::nullopt;
  }
  // Both poll: whichever claims it is killed, the other is the idle node that takes it over.
  s.enqueue(ids);
  if (!wait_for(
          [&] {
            return s.count(claimed_by, {ids[0], "recovery-a"}) == 1
                   || s.count(claimed_by, {ids[0], "recovery-b"}) == 1;
          },
          60s)) {
    std::fprintf(stderr, "round %d: nobody claimed the document\n%s\n", round, s.logs().c_str());
    return std::nullopt;
  }
  auto& victim = s.count(claimed_by, {ids[0], "recovery-a"}) == 1 ? a : b;
  const std::string survivor = &victim == &a ? "recovery-b" : "recovery-a";
  victim->signal(SIGKILL);
  auto killed = clock_type::now();
  round_result r;
  if (!wait_for(
          [&] {
            return s.count(claimed_by, {ids[0], survivor}) == 1 || s.with_status("completed") == 1;
          },
          120s)) {
    std::fprintf(stderr, "round %d: not taken over within 120 s\n%s\n", round, s.logs().c_str());
    return std::nullopt;
  }
  r.claimed = seconds_since(killed);
  if (!wait_for([&] { return s.with_status("completed") == 1; }, 120s)) {
    std::fprintf(stderr, "round %d: not completed within 120 s of the takeover\n%s\n", round,
                 s.logs().c_str());
    return std::nullopt;
  }
  r.completed = seconds_since(killed);
  victim->wait_exit(30s);
  auto& other = &victim == &a ? b : a;
  other->signal(SIGTERM);
  other->wait_exit(60s);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  if (rounds < 1) {
    std::fprintf(stderr, "usage: bench_recovery [ROUNDS >= 1]\n");
    return 2;
  }
  ::setenv("INGESTD_BINARY", INGESTD_BINARY_PATH, 0);
  ::setenv("INGESTD_SOURCE_DIR", INGESTD_SOURCE_PATH, 0);
  std::vector<double> claimed;
  std::vector<double> completed;
  for (int i = 1; i <= rounds; ++i) {
    auto r = run_round(i);
    if (!r)
      return 1;
    claimed.push_back(r->claimed);
    completed.push_back(r->completed);
    std::printf("round %2d: claimed by the idle node %.1f s after the kill, completed %.1f s\n", i,
                r->claimed, r->completed);
    std::fflush(stdout);
  }
  std::printf(
      "recovery over %d kills (lease 15 s, visibility 20 s, heartbeat 5 s, one-page scan):\n",
      rounds);
  std::printf("  taken over: median %.1f s, worst %.1f s\n", median(claimed),
              *std::max_element(claimed.begin(), claimed.end()));
  std::printf("  completed:  median %.1f s, worst %.1f s\n", median(completed),
              *std::max_element(completed.begin(), completed.end()));
  return 0;
}
