// SIGTERM with jobs in flight: within the grace period they finish and the process exits 0; with
// a grace shorter than the jobs their messages are visible again at once, their claims released,
// and a second daemon finishes them. The jobs wait on an LLM that answers when the test says so
// (held_llm_server), so that "in flight" does not depend on how fast this machine runs OCR.
#include <csignal>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

namespace {

int64_t claimed_in_flight(e2e_setup& s) {
  return s.count("SELECT count(*) FROM work_item WHERE stage = 'ingest' AND status = 'in-progress' "
                 "AND claim_token IS NOT NULL");
}

} // namespace

TEST(e2e_daemon_graceful, sigterm_lets_in_flight_jobs_finish_within_the_grace_and_exits_0) {
  e2e_setup s;
  held_llm_server llm;
  auto ids = s.add_documents(3, doc_kind::text_pdf);
  s.enqueue(ids);
  auto d = s.start({{"INGESTD_WORKER__SHUTDOWN_GRACE_SECONDS", "300"},
                    {"INGESTD_EXTRACTION__PROVIDER", "llm"},
                    {"INGESTD_EXTRACTION__LLM_BASE_URL", llm.url()}});
  // All three claimed and transcribed, each waiting on the LLM, which holds them until told.
  ASSERT_TRUE(await_waiting_on_extraction(s, 3, 120s)) << s.logs();
  ASSERT_TRUE(wait_until([&] { return llm.requests() == 3; }, 30s)) << s.logs();
  d->signal(SIGTERM);
  ASSERT_TRUE(wait_until(
      [&] { return d->log().find("shutting down: draining jobs") != std::string::npos; }, 30s))
      << d->log_tail();
  // Draining: the node waits for its jobs instead of exiting or giving them back.
  EXPECT_TRUE(d->running()) << d->log_tail();
  EXPECT_EQ(claimed_in_flight(s), 3) << d->log_tail();
  llm.release();
  auto rc = d->wait_exit(300s);
  ASSERT_TRUE(rc.has_value()) << d->log_tail();
  EXPECT_EQ(*rc, 0) << d->log_tail();
  expect_completed_exactly_once(s, ids);
  EXPECT_EQ(queue_depth(s), 0);
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event WHERE step = 'release'"), 0);
}

TEST(e2e_daemon_graceful,
     a_grace_shorter_than_the_jobs_releases_them_and_a_second_daemon_finishes) {
  e2e_setup s;
  held_llm_server llm;
  auto ids = s.add_documents(6, doc_kind::text_pdf);
  s.enqueue(ids);
  // The LLM never answers the first daemon: its jobs outlast any grace.
  auto first = s.start({{"INGESTD_WORKER__SHUTDOWN_GRACE_SECONDS", "1"},
                        {"INGESTD_WORKER__ID", "e2e-first"},
                        {"INGESTD_EXTRACTION__PROVIDER", "llm"},
                        {"INGESTD_EXTRACTION__LLM_BASE_URL", llm.url()}});
  ASSERT_TRUE(await_waiting_on_extraction(s, 6, 120s)) << s.logs();
  first->signal(SIGTERM);
  auto rc = first->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << first->log_tail();
  EXPECT_EQ(*rc, 0) << first->log_tail();
  // Every job was given back: its claim released without counting an attempt, the give-back in
  // its audit trail, its message visible again at once.
  EXPECT_EQ(s.with_status("in-progress"), 6) << first->log_tail();
  EXPECT_EQ(claimed_in_flight(s), 0) << "claims are released on shutdown\n" << first->log_tail();
  EXPECT_EQ(
      s.count("SELECT count(*) FROM work_item WHERE id = ANY($1::uuid[]) AND attempt_count = 0 "
              "AND claim_token IS NULL AND lease_expires_at IS NULL",
              {pg_array(ids)}),
      6);
  EXPECT_EQ(
      s.count("SELECT count(DISTINCT ingestion_id) FROM ingestion_event WHERE step = 'release' "
              "AND outcome = 'ok' AND worker_id = 'e2e-first' AND ingestion_id = ANY($1::uuid[])",
              {pg_array(ids)}),
      6);
  EXPECT_EQ(
      s.count("SELECT count(*) FROM queue_message WHERE queue_name = $1 AND visible_at <= now()",
              {s.queue_name()}),
      6)
      << "the unfinished jobs' messages are visible again at once\n"
      << first->log_tail();

  // The local rules this time. Visible and unclaimed: the second daemon takes them at once.
  auto second = s.start({{"INGESTD_WORKER__ID", "e2e-second"}});
  ASSERT_TRUE(await_completed(s, 6, 300s));
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 60s)) << s.logs();
  second->signal(SIGTERM);
  rc = second->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << second->log_tail();
  EXPECT_EQ(*rc, 0) << second->log_tail();
  expect_completed_exactly_once(s, ids);
  // Taken over without a crash: the first daemon's give-back cleared the claims.
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE id = ANY($1::uuid[]) AND crash_count = 0 "
                    "AND attempt_count = 0",
                    {pg_array(ids)}),
            6);
}
