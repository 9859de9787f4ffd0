// SIGTERM with jobs in flight: within the grace period they finish and the process exits 0; with
// a grace shorter than the jobs their messages are visible again at once, their claims released,
// and a second daemon finishes them.
#include <csignal>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

namespace {

int64_t claimed_in_flight(e2e_setup& s) {
  return s.count("SELECT count(*) FROM ingestion WHERE status = 'in-progress' AND claim_token IS NOT NULL");
}

} // namespace

TEST(e2e_daemon_graceful, sigterm_lets_in_flight_jobs_finish_within_the_grace_and_exits_0) {
  e2e_setup s;
  auto ids = s.add_documents(3, doc_kind::scan_png);
  s.enqueue(ids);
  auto d = s.start({{"INGESTD_WORKER__SHUTDOWN_GRACE_SECONDS", "300"}});
  // All three claimed and none finished: OCR of the first scan takes seconds.
  ASSERT_TRUE(wait_until([&] { return claimed_in_flight(s) == 3; }, 120s)) << s.logs();
  d->signal(SIGTERM);
  auto rc = d->wait_exit(300s);
  ASSERT_TRUE(rc.has_value()) << d->log_tail();
  EXPECT_EQ(*rc, 0) << d->log_tail();
  expect_completed_exactly_once(s, ids);
  EXPECT_EQ(queue_depth(s), 0);
}

TEST(e2e_daemon_graceful, a_grace_shorter_than_the_jobs_releases_them_and_a_second_daemon_finishes) {
  e2e_setup s;
  auto ids = s.add_documents(6, doc_kind::scan_png);
  s.enqueue(ids);
  auto first = s.start({{"INGESTD_WORKER__SHUTDOWN_GRACE_SECONDS", "1"}, {"INGESTD_WORKER__ID", "e2e-first"}});
  ASSERT_TRUE(wait_until([&] { return claimed_in_flight(s) == 6; }, 120s)) << s.logs();
  first->signal(SIGTERM);
  auto rc = first->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << first->log_tail();
  EXPECT_EQ(*rc, 0) << first->log_tail();
  // Six scans on one CPU worker take far longer than a second: some were given back.
  auto left = s.with_status("in-progress");
  ASSERT_GT(left, 0) << "every job finished within the 1 s grace: the test proves nothing";
  EXPECT_EQ(claimed_in_flight(s), 0) << "claims are released on shutdown\n" << first->log_tail();
  EXPECT_EQ(s.count("SELECT count(*) FROM queue_message WHERE queue_name = $1 AND visible_at <= now()",
                    {s.queue_name()}), left)
    << "the unfinished jobs' messages are visible again at once\n" << first->log_tail();

  auto second = s.start({{"INGESTD_WORKER__ID", "e2e-second"}});
  // Visible and unclaimed: the second daemon takes them at once, long before the lease would have expired.
  ASSERT_TRUE(await_completed(s, 6, 300s));
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 60s)) << s.logs();
  ASSERT_TRUE(await_complete_events(s, ids, 30s)) << s.logs();
  second->signal(SIGTERM);
  rc = second->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << second->log_tail();
  EXPECT_EQ(*rc, 0) << second->log_tail();
  expect_completed_exactly_once(s, ids);
}
