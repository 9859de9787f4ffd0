// The daemon on the Postgres queue and the filesystem store: a few hundred ingestions complete
// exactly once and SIGTERM exits 0; duplicate deliveries complete once; poison is deleted.
#include <csignal>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"
#include "messages/uuid.hpp"

using namespace std::chrono_literals;
using namespace ingestd;
using namespace ingestd::test;

TEST(e2e_daemon_pg, hundreds_of_ingestions_complete_exactly_once_and_sigterm_exits_0) {
  e2e_setup s;
  auto ids = s.add_documents(300, doc_kind::text_pdf);
  s.enqueue(ids);
  auto d = s.start();
  ASSERT_TRUE(await_completed(s, 300, 480s));
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 30s)) << s.logs();
  ASSERT_TRUE(await_complete_events(s, ids, 30s)) << s.logs();
  d->signal(SIGTERM);
  auto rc = d->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << "no exit within 60 s of SIGTERM\n" << d->log_tail();
  EXPECT_EQ(*rc, 0) << d->log_tail();
  expect_completed_exactly_once(s, ids);
  EXPECT_EQ(s.with_status("failed"), 0);
}

TEST(e2e_daemon_pg, the_same_ingestion_enqueued_twice_completes_once) {
  e2e_setup s;
  auto ids = s.add_documents(4, doc_kind::text_pdf);
  // Twice at once: both copies land in the same receive batch or in two.
  auto twice = ids;
  twice.insert(twice.end(), ids.begin(), ids.end());
  s.enqueue(twice);
  auto d = s.start();
  ASSERT_TRUE(await_completed(s, 4, 120s));
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 60s)) << s.logs();
  // Again after completion: a duplicate of a finished ingestion is deleted, not redone.
  s.enqueue(ids);
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 60s)) << s.logs();
  ASSERT_TRUE(await_complete_events(s, ids, 30s)) << s.logs();
  d->signal(SIGTERM);
  auto rc = d->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << d->log_tail();
  EXPECT_EQ(*rc, 0) << d->log_tail();
  expect_completed_exactly_once(s, ids);
}

TEST(e2e_daemon_pg, poison_is_deleted_and_a_corrupt_pdf_fails_permanently_once) {
  e2e_setup s;
  auto corrupt = s.add_documents(1, doc_kind::corrupt_pdf);
  auto good = s.add_documents(1, doc_kind::text_pdf);
  s.enqueue({"not a uuid", "{\"ingestion_id\": 1}", uuid::v7().str(), corrupt[0], good[0]});
  auto d = s.start();
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 120s))
      << queue_depth(s) << " messages left\n"
      << s.logs();
  EXPECT_TRUE(d->running()) << "poison must not crash the daemon\n" << d->log_tail();
  auto row = s.db().query("SELECT i.status, w.error_class, w.attempt_count, w.last_error "
                          "FROM ingestion AS i JOIN work_item AS w ON w.id = i.id WHERE i.id = $1",
                          {corrupt[0]});
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0][0].value_or(""), "failed");
  EXPECT_EQ(row[0][1].value_or(""), "permanent") << row[0][3].value_or("");
  EXPECT_EQ(row[0][2].value_or(""), "1") << "a permanent failure is not retried";
  // One claim, one delivery: no spinning.
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND step = "
                    "'claim' AND outcome = 'ok'",
                    {corrupt[0]}),
            1);
  EXPECT_EQ(s.count("SELECT count(*) FROM document d JOIN ingestion i ON i.document_id = d.id "
                    "WHERE i.id = $1 AND d.needs_human_review",
                    {corrupt[0]}),
            1);
  expect_completed_exactly_once(s, good);
  ASSERT_TRUE(await_complete_events(s, good, 30s)) << s.logs();
  d->signal(SIGTERM);
  auto rc = d->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << d->log_tail();
  EXPECT_EQ(*rc, 0) << d->log_tail();
}
