// `ingestd cancel` as a user runs it against a running daemon: a running ingestion
// (its job waiting on a silent LLM) stops at its next step boundary and ends `cancelled`, its
// claim released and its message deleted; a queued one is cancelled at once and its message,
// when it arrives, is skipped and deleted; cancelling again is fine; cancelling a finished or
// unknown ingestion is a clear error with exit 1; `ingestd status` counts the cancelled ones.
#include <chrono>
#include <csignal>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"
#include "tests/support/environment.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

namespace {

std::string status_of(e2e_setup& s, const std::string& id) {
  return s.db().scalar("SELECT status FROM ingestion WHERE id = $1::uuid", {id});
}

} // namespace

TEST(e2e_daemon_cancel, running_and_queued_ingestions_are_cancelled_and_finished_ones_refused) {
  e2e_setup s;
  silent_server llm;
  auto ids = s.add_documents(3, doc_kind::text_pdf);
  const auto& running = ids[0];
  const auto& queued = ids[1];
  const auto& finished = ids[2];
  s.enqueue({running});
  auto daemon = s.start({{"INGESTD_EXTRACTION__PROVIDER", "llm"},
                         {"INGESTD_EXTRACTION__LLM_BASE_URL", llm.url()},
                         // The silent LLM's step ends by its deadline: the next step boundary.
                         {"INGESTD_WORKER__STEP_TIMEOUT_SECONDS", "6"}});
  ASSERT_TRUE(await_waiting_on_extraction(s, 120s)) << s.logs();

  auto r = run_cli(s, {"cancel", running});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cancelling ingestion=" + running), std::string::npos) << r.out;
  ASSERT_TRUE(wait_until([&] { return status_of(s, running) == "cancelled"; }, 60s)) << s.logs();
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 30s)) << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE id = $1::uuid AND status = 'cancelled' "
                    "AND claim_token IS NULL AND completed_at IS NOT NULL AND attempt_count = 0",
                    {running}),
            1);
  EXPECT_EQ(
      s.count("SELECT count(*) FROM ingestion WHERE id = $1::uuid AND completed_at IS NOT NULL",
              {running}),
      1);
  EXPECT_EQ(
      s.count(
          "SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1::uuid AND step = 'cancel' "
          "AND outcome = 'requested' AND worker_id = 'cli'",
          {running}),
      1);
  EXPECT_EQ(
      s.count(
          "SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1::uuid AND step = 'cancel' "
          "AND outcome = 'ok'",
          {running}),
      1);
  // Nothing half-written: no extraction result, no completion.
  EXPECT_EQ(
      s.count("SELECT count(*) FROM ingestion WHERE id = $1::uuid AND structured_data IS NULL",
              {running}),
      1);
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1::uuid AND step = "
                    "'complete'",
                    {running}),
            0);

  // Queued: cancelled at once; its message is deleted when it arrives, without a claim.
  r = run_cli(s, {"cancel", queued});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cancelled ingestion=" + queued), std::string::npos) << r.out;
  EXPECT_EQ(status_of(s, queued), "cancelled");
  s.enqueue({queued});
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 30s)) << s.logs();
  EXPECT_EQ(
      s.count(
          "SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1::uuid AND step = 'claim'",
          {queued}),
      0);
  EXPECT_EQ(status_of(s, queued), "cancelled");

  // Again: fine, and said so.
  r = run_cli(s, {"cancel", queued});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("was cancelled before"), std::string::npos) << r.out;

  // Finished (its work item completed: the trigger sets the ingestion's status), unknown,
  // malformed.
  s.db().query(
      "UPDATE work_item SET status = 'completed', completed_at = now() WHERE id = $1::uuid",
      {finished});
  r = run_cli(s, {"cancel", finished});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is already completed: only a queued or running ingestion can be cancelled"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(status_of(s, finished), "completed");
  r = run_cli(s, {"cancel", "018f0000-0000-7000-8000-000000000000"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no ingestion"), std::string::npos) << r.err;
  r = run_cli(s, {"cancel", "not-an-id"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not an ingestion id"), std::string::npos) << r.err;

  r = run_cli(s, {"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cancelled 2"), std::string::npos) << r.out;

  daemon->signal(SIGTERM);
  auto rc = daemon->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << daemon->log_tail();
  EXPECT_EQ(*rc, 0) << daemon->log_tail();
}
