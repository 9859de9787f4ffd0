// kill -9 mid-run: a second daemon finishes everything, nothing is completed twice, and the dead
// daemon's claims are taken over once their lease (1 minute) expires.
#include <csignal>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

TEST(e2e_daemon_crash, sigkill_mid_run_then_restart_completes_everything_exactly_once) {
  e2e_setup s;
  // OCR scans take seconds each on the one CPU worker: the run is still going when it is killed.
  auto ids = s.add_documents(8, doc_kind::scan_png);
  auto text = s.add_documents(4, doc_kind::text_pdf);
  ids.insert(ids.end(), text.begin(), text.end());
  s.enqueue(ids);
  auto first = s.start({{"INGESTD_WORKER__ID", "e2e-first"}});
  // Some completions, and claims still held by the first daemon.
  ASSERT_TRUE(wait_until([&] {
    return s.with_status("completed") >= 1
           && s.count("SELECT count(*) FROM ingestion WHERE status = 'in-progress' AND claimed_by = 'e2e-first' "
                      "AND claim_token IS NOT NULL") >= 1;
  }, 300s)) << s.logs();
  first->signal(SIGKILL);
  auto rc = first->wait_exit(30s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 128 + SIGKILL);
  auto held = s.db().query("SELECT id FROM ingestion WHERE status = 'in-progress' AND claimed_by = 'e2e-first' "
                           "AND claim_token IS NOT NULL");
  ASSERT_FALSE(held.empty());
  auto completed_before = s.with_status("completed");
  ASSERT_LT(completed_before, static_cast<int64_t>(ids.size())) << "the kill came after the run ended";

  auto second = s.start({{"INGESTD_WORKER__ID", "e2e-second"}});
  ASSERT_TRUE(await_completed(s, static_cast<int64_t>(ids.size()), 420s));
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 60s)) << s.logs();
  ASSERT_TRUE(await_complete_events(s, ids, 30s)) << s.logs();
  second->signal(SIGTERM);
  rc = second->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << second->log_tail();
  EXPECT_EQ(*rc, 0) << second->log_tail();

  expect_completed_exactly_once(s, ids);
  // The dead daemon's claims were reclaimed by the second one, not before their lease expired.
  std::vector<std::string> held_ids;
  for (auto& r : held)
    held_ids.push_back(*r[0]);
  auto arr = pg_array(held_ids);
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = ANY($1::uuid[]) "
                    "AND step = 'complete' AND outcome = 'ok' AND worker_id = 'e2e-second'", {arr}),
            static_cast<int64_t>(held_ids.size()));
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion WHERE id = ANY($1::uuid[]) AND claimed_by IS DISTINCT FROM NULL "
                    "AND claimed_by <> 'e2e-second'", {arr}), 0);
}
