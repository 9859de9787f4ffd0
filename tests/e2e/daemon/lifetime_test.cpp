// worker.lifetime_units: a node that has admitted its units of work drains and exits 0
// with its capacity usage logged, leaving the rest on the queue; a restarted node finishes the
// rest, every ingestion completed exactly once.
#include <csignal>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

TEST(e2e_daemon_lifetime,
     a_node_exits_0_after_its_lifetime_and_a_restarted_node_finishes_the_rest) {
  e2e_setup s;
  auto ids = s.add_documents(8, doc_kind::text_pdf);
  s.enqueue(ids);
  // Every stage's jobs count against the lifetime: this node serves the ingest stage only, so its
  // three units are three ingestions (the matching jobs they make wait for the second node).
  auto first = s.start({{"INGESTD_WORKER__LIFETIME_UNITS", "3"},
                        {"INGESTD_STAGES__SERVE", "ingest"},
                        {"INGESTD_WORKER__CAPACITY_SLOTS", "2"},
                        {"INGESTD_WORKER__ID", "e2e-lifetime-first"}});
  auto rc = first->wait_exit(120s);
  ASSERT_TRUE(rc.has_value()) << first->log_tail();
  EXPECT_EQ(*rc, 0) << first->log_tail();
  // Exactly its three units: nothing else was taken, nothing left claimed.
  EXPECT_EQ(s.with_status("completed"), 3) << first->log_tail();
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE claim_token IS NOT NULL"), 0);
  EXPECT_EQ(queue_depth(s), 5);
  auto log = first->log();
  EXPECT_NE(log.find("worker.lifetime_units reached"), std::string::npos) << log;
  EXPECT_NE(log.find("capacity usage"), std::string::npos) << log;
  EXPECT_NE(log.find("\"units_admitted\":3"), std::string::npos) << log;

  auto second = s.start({{"INGESTD_WORKER__ID", "e2e-lifetime-second"}});
  ASSERT_TRUE(await_completed(s, 8, 180s));
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 60s)) << s.logs();
  ASSERT_TRUE(await_complete_events(s, ids, 30s)) << s.logs();
  second->signal(SIGTERM);
  rc = second->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << second->log_tail();
  EXPECT_EQ(*rc, 0) << second->log_tail();
  expect_completed_exactly_once(s, ids);
}
