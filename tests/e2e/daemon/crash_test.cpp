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
  // A job appends its audit events after its completion: a kill -9 in between loses them, so the
  // one-event-each check covers what was finished after the kill; before it, at most one.
  std::vector<std::string> after;
  for (auto& r : s.db().query("SELECT id FROM ingestion WHERE id = ANY($1::uuid[]) AND status <> 'completed'",
                              {pg_array(ids)}))
    after.push_back(*r[0]);

  auto second = s.start({{"INGESTD_WORKER__ID", "e2e-second"}});
  ASSERT_TRUE(await_completed(s, static_cast<int64_t>(ids.size()), 420s));
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 60s)) << s.logs();
  ASSERT_TRUE(await_complete_events(s, after, 30s)) << s.logs();
  second->signal(SIGTERM);
  rc = second->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << second->log_tail();
  EXPECT_EQ(*rc, 0) << second->log_tail();

  expect_completed_exactly_once(s, after);
  EXPECT_EQ(s.with_status("completed"), static_cast<int64_t>(ids.size()));
  EXPECT_EQ(s.count("SELECT count(*) FROM (SELECT ingestion_id FROM ingestion_event WHERE step = 'complete' "
                    "AND outcome = 'ok' GROUP BY ingestion_id HAVING count(*) > 1) x"), 0)
    << "an ingestion was completed twice";
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion i JOIN document d ON d.id = i.document_id "
                    "WHERE d.structured_data IS NOT NULL AND NOT d.needs_human_review"),
            static_cast<int64_t>(ids.size()));
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
