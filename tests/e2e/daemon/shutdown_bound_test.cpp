// SIGTERM while another session holds queue_message locked: the daemon ends within its grace
// period plus the fixed margin, whether the database's deadlines end the stuck calls or (with
// them off, as when the server never answers) the watchdog does, exiting non-zero with a log
// line naming what it could not release.
//
// Which deadline ends a stuck shutdown must not depend on the machine. The poller's own deadline
// on a receive (its long poll plus 30 s, actors/poller.cpp) is about as long as the shutdown bound
// here (a 1 s grace plus 30 s) and starts a little earlier: with only the queue locked, a receive
// past its deadline ends the drain a moment before the watchdog fires, and the node exits 0 or
// is ended by the watchdog depending on scheduling. A database that never answers holds every
// table: with work_item locked too, the job's give-back (the claim's release) waits on it, and
// its deadline (worker.step_timeout_seconds, set far beyond the bound) is the only other one in
// the drain's way, so the watchdog is certainly first.
#include <chrono>
#include <csignal>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "adapters/db/pg_connection.hpp"
#include "e2e_checks.hpp"

using namespace std::chrono_literals;
using namespace ingestd;
using namespace ingestd::test;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr auto grace = 1s;
/// The promise to operators: a node is gone at most this long after its grace period
/// (shutdown_margin in actors/shutdown.hpp).
constexpr auto shutdown_margin = 30s;
/// Start-up of the exit, reaping and a loaded machine: small against the margin itself.
constexpr auto slack = 15s;

/// One document whose job waits on the silent LLM with its claim held, then `tables` locked by
/// another session, then SIGTERM. Returns the exit status (nullopt: still running after the
/// bound) and how long the exit took.
struct outcome {
  std::optional<int> status;
  clock_type::duration took{};
  std::string log;
};

outcome sigterm_with_tables_locked(const std::vector<std::string>& tables,
                                   const std::map<std::string, std::string>& extra) {
  e2e_setup s;
  silent_server llm;
  auto ids = s.add_documents(1, doc_kind::text_pdf);
  s.enqueue(ids);
  std::map<std::string, std::string> env{
      {"INGESTD_WORKER__SHUTDOWN_GRACE_SECONDS", std::to_string(grace.count())},
      {"INGESTD_EXTRACTION__PROVIDER", "llm"},
      {"INGESTD_EXTRACTION__LLM_BASE_URL", llm.url()},
  };
  env.insert(extra.begin(), extra.end());
  auto d = s.start(env);
  outcome out;
  // Transcribed and claimed: the job now waits on the LLM.
  if (!await_waiting_on_extraction(s, 120s)) {
    ADD_FAILURE() << "the job never reached the LLM\n" << s.logs();
    return out;
  }
  // Destroyed before `s`: closing the session releases the lock before the schema is dropped.
  pg::connection locker{s.db().url(), pg::session_options::tcp_only()};
  EXPECT_TRUE(locker.exec_simple("BEGIN"));
  for (auto& table : tables)
    EXPECT_TRUE(locker.exec_simple("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE"));
  auto start = clock_type::now();
  d->signal(SIGTERM);
  out.status = d->wait_exit(grace + shutdown_margin + slack);
  out.took = clock_type::now() - start;
  out.log = d->log();
  if (!out.status)
    d->signal(SIGKILL);
  return out;
}

} // namespace

TEST(e2e_daemon_shutdown_bound,
     a_database_that_never_answers_ends_in_the_watchdogs_exit_naming_what_is_stuck) {
  // The server-side deadlines off: the queue's and the claims' calls wait on the locks for ever,
  // as they would on a database that stopped answering. The job's give-back waits for the
  // claim's release within its step deadline: ten times the bound.
  auto step_timeout = 10 * (grace + shutdown_margin);
  auto out = sigterm_with_tables_locked(
      {"queue_message", "work_item"},
      {{"INGESTD_DATABASE__STATEMENT_TIMEOUT_SECONDS", "0"},
       {"INGESTD_DATABASE__LOCK_TIMEOUT_SECONDS", "0"},
       {"INGESTD_WORKER__STEP_TIMEOUT_SECONDS", std::to_string(step_timeout.count())}});
  ASSERT_TRUE(out.status.has_value()) << "no exit within grace + margin\n" << out.log;
  EXPECT_NE(*out.status, 0) << out.log;
  EXPECT_LE(out.took, grace + shutdown_margin + slack);
  EXPECT_GE(out.took, grace + shutdown_margin - 1s) << "the watchdog fired early";
  auto at = out.log.find("shutdown did not finish in time");
  ASSERT_NE(at, std::string::npos) << out.log;
  auto line = out.log.substr(at, out.log.find('\n', at) - at);
  // The calls stuck on the locks are named: the queue's and the claims' (the job's release
  // waits behind them for a connection of the claimed-work repository).
  EXPECT_NE(line.find("ingestd_queue_"), std::string::npos) << line;
  EXPECT_NE(line.find("ingestd_work_"), std::string::npos) << line;
  EXPECT_NE(line.find("\"stage\""), std::string::npos) << line;
  // The drain never finished: the job, giving its work back, held it until the watchdog ended
  // the process.
  EXPECT_NE(line.find("\"jobs_in_flight\":1"), std::string::npos) << line;
  EXPECT_EQ(out.log.find("drained: stopping the worker"), std::string::npos) << out.log;
}

TEST(e2e_daemon_shutdown_bound,
     with_the_default_deadlines_a_locked_queue_still_ends_within_grace_and_margin) {
  auto out = sigterm_with_tables_locked({"queue_message"}, {});
  ASSERT_TRUE(out.status.has_value()) << "no exit within grace + margin\n" << out.log;
  EXPECT_LE(out.took, grace + shutdown_margin + slack);
  // Either the deadlines ended every stuck call in time and the drain completed, or the
  // watchdog ended the process and said what it could not release.
  if (*out.status != 0) {
    EXPECT_NE(out.log.find("shutdown did not finish in time"), std::string::npos) << out.log;
  }
  // The lock waits ended as transient errors rather than hanging.
  EXPECT_NE(out.log.find("55P03"), std::string::npos) << out.log;
}
