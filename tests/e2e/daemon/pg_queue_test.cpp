// The daemon on the Postgres queue and the filesystem store: a few hundred ingestions complete
// exactly once and SIGTERM exits 0; duplicate deliveries complete once; poison is deleted; one
// tenant's import does not hold another tenant's documents behind it.
#include <cmath>
#include <csignal>
#include <iostream>

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

TEST(e2e_daemon_pg, a_tenants_ten_documents_are_not_held_behind_another_tenants_import) {
  // Tenant A's import of 300 documents, then tenant B's 10, on a node of two slots with the
  // default fair spacing (1 s): B's documents take turns with A's instead of waiting for all 300.
  e2e_setup s;
  const std::string a = "0193a000-0000-7000-8000-0000000000aa";
  const std::string b = "0193a000-0000-7000-8000-0000000000bb";
  auto import = s.add_documents(300, doc_kind::text_pdf, {}, a);
  auto few = s.add_documents(10, doc_kind::text_pdf, {}, b);
  auto d = s.start({{"INGESTD_WORKER__MAX_IN_FLIGHT", "2"}});
  // As intake hands work over: ingestd_send with the work item's tenant, one statement each.
  auto send = [&](const std::vector<std::string>& ids, const std::string& tenant) {
    std::string arr = "{";
    for (auto& id : ids)
      arr += (arr.size() > 1 ? "," : "") + id;
    s.db().query("SELECT count(ingestd_send($1, i, 50, false, $2::uuid)) "
                 "FROM unnest($3::text[]) AS i",
                 {s.queue_name(), tenant, arr + "}"});
  };
  auto t0 = std::chrono::steady_clock::now();
  send(import, a);
  send(few, b);
  auto between = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto done_of = [&](const std::string& tenant) {
    return s.count("SELECT count(*) FROM work_item WHERE tenant_id = $1 AND stage = 'ingest' "
                   "AND status = 'completed'",
                   {tenant});
  };
  ASSERT_TRUE(wait_until([&] { return done_of(b) == 10; }, 300s))
      << done_of(b) << " of B's documents completed\n"
      << s.logs();
  // A's documents that finished before B's last one did: B's tenth ranks after A's tenth (one
  // second apart each), plus the seconds between the two sends, plus the two slots' work.
  auto a_before
      = s.count("SELECT count(*) FROM work_item WHERE tenant_id = $1 AND stage = 'ingest' "
                "AND completed_at < (SELECT max(completed_at) FROM work_item "
                "WHERE tenant_id = $2 AND stage = 'ingest')",
                {a, b});
  auto b_took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "fair shares on the daemon: tenant B's 10 documents finished " << b_took
            << " s after A's import was sent, while " << a_before
            << " of tenant A's 300 finished\n";
  EXPECT_LE(a_before, 10 + static_cast<int64_t>(std::ceil(between)) + 2) << s.logs();
  d->signal(SIGTERM);
  auto rc = d->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << d->log_tail();
  EXPECT_EQ(*rc, 0) << d->log_tail();
}
