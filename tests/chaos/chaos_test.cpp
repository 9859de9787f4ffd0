// Chaos: three `ingestd run` nodes on one Postgres queue while documents keep arriving, and faults
// on a random (seeded, printed) schedule: kill -9 and restart, SIGSTOP longer than the lease then
// SIGCONT, PostgreSQL restarted, the nodes' database sessions terminated, and their database
// sessions stalled (the server's backends for them paused, then resumed). Afterwards every
// document is completed exactly once with the right result and matched once, and nothing is left
// in progress or in the queues. "Exactly once" is counted by triggers this test installs, not by
// ingestd's own audit trail.
//
//   INGESTD_CHAOS_SECONDS   how long faults are injected (default 45: the CTest entry)
//   INGESTD_CHAOS_SEED      the schedule's seed (default: random; printed either way)
//   INGESTD_CHAOS_RESTART_POSTGRES  0: terminate the nodes' sessions instead of restarting the
//                           server (a PostgreSQL that other work shares); default 1
// tests/chaos/run-long.sh runs the same test for 10 minutes.
#include <algorithm>
#include <csignal>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "tests/chaos/chaos_support.hpp"
#include "tests/support/daemon/e2e_setup.hpp"
#include "tests/support/environment.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

namespace {

using clock_type = std::chrono::steady_clock;

/// The lease the nodes run with.
constexpr auto lease = chaos_lease;

/// Runs a command line through the shell; its exit status.
int shell(const std::string& command) {
  return std::system(command.c_str()); // NOLINT(cert-env33-c): the test's own fixed commands
}

class chaos {
public:
  chaos(e2e_setup& s, uint32_t seed, bool restart_postgres)
      : s_(s), rng_(seed), restart_postgres_(restart_postgres) {}

  void start_nodes(int n) {
    for (int i = 0; i < n; ++i) {
      nodes_.push_back(chaos_node{"chaos-" + std::to_string(i + 1), nullptr, std::nullopt});
      start(nodes_.back());
    }
  }

  // A claim that expires without a recorded outcome counts as a crash, and N crashes fail a
  // document as poison: here faults hit documents again and again by design, so the bound is set
  // out of reach (the poison bound has tests of its own). An attempt that a fault failed is
  // retried after seconds: the default back-offs (5 and 30 minutes) would outlast the time the
  // test gives the work once the faults stop, and the wait would race the back-off.
  void start(chaos_node& n) {
    n.proc = s_.start({{"INGESTD_WORKER__ID", n.id},
                       {"INGESTD_WORKER__MAX_RETRY_ATTEMPTS", "100"},
                       {"INGESTD_WORKER__RETRY_BACKOFF_SECONDS", "1,5"},
                       {"INGESTD_MATCHING__RETRY_BACKOFF_SECONDS", "1,5"}});
  }

  /// Documents arriving during the run: a few text PDFs, now and then a scan.
  void arrive() {
    auto ids = s_.add_documents(pick(2, 6), doc_kind::text_pdf);
    if (pick(0, 3) == 0) {
      auto scans = s_.add_documents(1, doc_kind::scan_png);
      ids.insert(ids.end(), scans.begin(), scans.end());
    }
    s_.enqueue(ids);
    total_ += static_cast<int64_t>(ids.size());
  }

  /// One fault, chosen at random.
  void fault() {
    switch (pick(0, 4)) {
    case 0:
      kill_and_restart();
      break;
    case 1:
      stop_past_the_lease();
      break;
    case 2:
      restart_postgres_ ? restart_postgres() : terminate_sessions();
      break;
    case 3:
      terminate_sessions();
      break;
    default:
      stall_sessions();
      break;
    }
  }

  /// Waits `d`, resuming nodes whose stop has lasted long enough.
  void wait(std::chrono::milliseconds d) {
    auto until = clock_type::now() + d;
    while (clock_type::now() < until) {
      resume_due();
      std::this_thread::sleep_for(100ms);
    }
  }

  /// The time between two faults: 1.5 to 4 s.
  void pause() { wait(std::chrono::milliseconds{pick(1500, 4000)}); }

  /// Ends every fault: stopped nodes resumed once their stop has outlasted the lease, dead ones
  /// started again.
  void heal() {
    while (
        std::any_of(nodes_.begin(), nodes_.end(), [](const chaos_node& n) { return n.resume_at; }))
      wait(200ms);
    for (auto& n : nodes_)
      if (!n.proc->running()) {
        log("start " + n.id + " again (it had exited)");
        start(n);
      }
  }

  int64_t total() const { return total_; }
  const std::string& journal() const { return journal_; }
  std::vector<chaos_node>& nodes() { return nodes_; }

private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>{lo, hi}(rng_); }

  void log(const std::string& what) {
    journal_ += what + "\n";
    std::printf("chaos: %s\n", what.c_str());
    std::fflush(stdout);
  }

  chaos_node* running_node() {
    std::vector<chaos_node*> up;
    for (auto& n : nodes_)
      if (!n.resume_at && n.proc->running())
        up.push_back(&n);
    if (up.empty())
      return nullptr;
    return up[static_cast<size_t>(pick(0, static_cast<int>(up.size()) - 1))];
  }

  void resume_due() {
    for (auto& n : nodes_)
      if (n.resume_at && clock_type::now() >= *n.resume_at) {
        n.proc->signal(SIGCONT);
        n.resume_at.reset();
        log("SIGCONT " + n.id);
      }
  }

  void kill_and_restart() {
    auto* n = running_node();
    if (n == nullptr)
      return;
    log("kill -9 " + n->id);
    n->proc->signal(SIGKILL);
    ASSERT_TRUE(n->proc->wait_exit(30s).has_value());
    wait(std::chrono::milliseconds{pick(200, 2000)});
    log("start " + n->id + " again");
    start(*n);
  }

  void stop_past_the_lease() {
    auto* n = running_node();
    if (n == nullptr)
      return;
    log("SIGSTOP " + n->id + " for the lease + 3 s");
    n->proc->signal(SIGSTOP);
    n->resume_at = clock_type::now() + lease + 3s;
  }

  void restart_postgres() {
    auto data = s_.db().scalar("SHOW data_directory");
    auto bindir = s_.db().scalar("SELECT setting FROM pg_config WHERE name = 'BINDIR'");
    auto logfile = data + "/../postgres.log";
    std::string as_owner = ::geteuid() == 0 ? "runuser -u postgres -- " : "";
    log("restart PostgreSQL");
    auto rc = shell(as_owner + bindir + "/pg_ctl -D " + data + " -l " + logfile
                    + " -m fast -w -t 60 restart >/dev/null");
    ASSERT_EQ(rc, 0) << "pg_ctl restart failed";
  }

  void terminate_sessions() {
    log("terminate the nodes' database sessions: "
        + std::to_string(s_.db().terminate_adapter_backends()));
  }

  void stall_sessions() {
    // The server's processes for the nodes' sessions paused: to the nodes, a database that stops
    // answering (as over a stalled network) and then answers again.
    auto pids = s_.db().query("SELECT pid FROM pg_stat_activity WHERE application_name = $1",
                              {s_.db().name()});
    if (pids.empty())
      return;
    auto ms = pick(2000, 8000);
    log("stall " + std::to_string(pids.size()) + " database sessions for " + std::to_string(ms)
        + " ms");
    for (auto& p : pids)
      ::kill(std::stoi(*p[0]), SIGSTOP);
    wait(std::chrono::milliseconds{ms});
    for (auto& p : pids)
      ::kill(std::stoi(*p[0]), SIGCONT);
  }

  e2e_setup& s_;
  std::mt19937 rng_;
  bool restart_postgres_;
  std::vector<chaos_node> nodes_;
  int64_t total_ = 0;
  std::string journal_;
};

/// The ingestions' work items not completed, with their claim and their queue messages: what a
/// failure shows.
std::string unfinished(e2e_setup& s, const std::string& stage = "ingest") {
  std::string out
      = "not completed (work item: id status attempts crashes claim claimed_by lease_expires "
        "message_seen due_at last_error | messages: queue receive_count visible_at | now):\n";
  for (auto& r : s.db().query(
           "SELECT w.id::text, w.status, w.attempt_count::text, w.crash_count::text, "
           "coalesce(w.claim_token::text, '-'), coalesce(w.claimed_by, '-'), "
           "coalesce(w.lease_expires_at::text, '-'), w.message_seen_at::text, "
           "w.due_at::text, coalesce(w.last_error, '-'), "
           "coalesce((SELECT string_agg(m.queue_name || ' ' || m.receive_count || ' ' || "
           "m.visible_at, '; ') "
           "          FROM queue_message m WHERE m.body LIKE '%' || w.id || '%'), 'no message'), "
           "now()::text FROM work_item w WHERE w.stage = $1 AND w.status <> 'completed'",
           {stage})) {
    for (auto& v : r)
      out += v.value_or("NULL") + " | ";
    out += "\n";
  }
  return out;
}

} // namespace

TEST(chaos, three_nodes_under_faults_complete_every_document_exactly_once) {
  auto seconds = std::stoi(env_or("INGESTD_CHAOS_SECONDS", "45"));
  auto seed_text = env_or("INGESTD_CHAOS_SEED", "");
  auto seed
      = seed_text.empty() ? std::random_device{}() : static_cast<uint32_t>(std::stoul(seed_text));
  std::printf("chaos: seed %u (INGESTD_CHAOS_SEED=%u repeats this schedule), %d s of faults\n",
              seed, seed, seconds);
  RecordProperty("seed", std::to_string(seed));

  e2e_setup s;
  install_accounting(s);

  chaos c{s, seed, env_or("INGESTD_CHAOS_RESTART_POSTGRES", "1") != "0"};
  c.arrive();
  c.start_nodes(3);
  auto end = clock_type::now() + std::chrono::seconds{seconds};
  int faults = 0;
  while (clock_type::now() < end && !::testing::Test::HasFatalFailure()) {
    c.pause();
    c.arrive();
    c.fault();
    ++faults;
  }
  ASSERT_FALSE(::testing::Test::HasFatalFailure()) << c.journal();
  c.heal();

  // Everything finishes once the faults stop: within the lease (claims of killed nodes) plus the
  // time to work off what is left.
  auto n = c.total();
  auto done = wait_until([&] { return s.with_status("completed") >= n; }, lease + 240s, 500ms);
  ASSERT_TRUE(done) << s.with_status("completed") << " of " << n << " completed\n"
                    << unfinished(s) << c.journal() << s.logs();
  ASSERT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM queue_message WHERE queue_name = $1", {s.queue_name()})
               == 0;
      },
      60s, 200ms))
      << "messages left in the queue\n"
      << s.logs();
  // Every completion handed the document's matching to the match stage: it ends too, and its
  // queue empties (a claim a fault left behind is taken over once its lease runs out).
  ASSERT_TRUE(wait_until([&] { return matching_ended(s) >= n; }, lease + 240s, 500ms))
      << matching_ended(s) << " of " << n << " matchings ended\n"
      << unfinished(s, "match") << c.journal() << s.logs();
  ASSERT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM queue_message WHERE queue_name = $1",
                       {s.match_queue_name()})
               == 0;
      },
      60s, 200ms))
      << "messages left in the match queue\n"
      << s.logs();
  stop_all(c.nodes());

  std::printf("chaos: %lld documents, %d faults\n", static_cast<long long>(n), faults);
  expect_exactly_once(s, n, c.journal());
  expect_matching_once(s, n, c.journal());
}
