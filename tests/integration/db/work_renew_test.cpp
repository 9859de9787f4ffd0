// The heartbeat's lease renewal (pg_work_repository::renew_leases) on a fresh schema: one statement
// for all of a node's claims extends the leases still held and answers the claims that were lost
// (taken over, finished, unknown); a row another statement holds is skipped, not waited for, and
// is not lost for it.
#include "tests/integration/db/work_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::work_test;
using test::ingest_request;

TEST_F(work_test, renewals_extend_leases_and_report_the_claims_that_were_lost) {
  auto kept = new_ingestion();
  auto stolen = new_ingestion();
  auto finished = new_ingestion();
  auto tk = claimed(kept, "w1", 30s);
  auto ts = claimed(stolen, "w1", 30s);
  auto tf = claimed(finished, "w1", 30s);
  expire_lease(stolen);
  ASSERT_EQ(claim_one(ingest_request(stolen), "w2", 30s).outcome, claim_outcome::granted);
  ASSERT_TRUE(complete_ingestion(test::completing(tf)));
  long_forgotten();
  auto lost = renew({tk, ts, tf, claim_ref{uuid::v7(), uuid::v7()}}, 600s);
  ASSERT_TRUE(lost) << lost.error().describe();
  std::set<uuid> lost_ids;
  for (auto& r : *lost)
    lost_ids.insert(r.item);
  EXPECT_EQ(lost_ids.size(), 3u);
  EXPECT_TRUE(lost_ids.count(stolen) && lost_ids.count(finished));
  EXPECT_EQ(item(kept, "lease_expires_at > now() + interval '590 s'"), "true");
  // The renewal goes with the message's visibility extension: the message is seen.
  EXPECT_EQ(item(kept, "message_seen_at > now() - interval '10 s'"), "true");
  // The stolen one's new holder keeps its lease.
  EXPECT_EQ(item(stolen, "lease_expires_at < now() + interval '40 s' AND claimed_by = 'w2'"),
            "true");
  // An expired lease that nobody took yet is still ours to renew.
  expire_lease(kept);
  lost = renew({tk}, 60s);
  ASSERT_TRUE(lost);
  EXPECT_TRUE(lost->empty());
  EXPECT_EQ(item(kept, "lease_expires_at > now()"), "true");
  lost = renew({}, 60s);
  ASSERT_TRUE(lost);
  EXPECT_TRUE(lost->empty());
}

TEST_F(work_test, a_renewal_skips_items_another_statement_holds_and_loses_none_of_them) {
  auto kept = new_ingestion();
  auto busy = new_ingestion();
  auto tk = claimed(kept, "w1", 30s);
  auto tb = claimed(busy, "w1", 30s);
  auto before = item(busy, "lease_expires_at::text");
  // Another session holds the busy item's row (as this node's completion of it does) and does
  // not end: the renewal does not wait for it, renews the other, and does not report it lost.
  pg::connection other{db->url()};
  constexpr pg::statement lock_row{"test_lock_row",
                                   "SELECT id FROM work_item WHERE id = $1 FOR UPDATE"};
  ASSERT_TRUE(other.exec_simple("BEGIN"));
  ASSERT_TRUE(other.exec(lock_row, {busy.str()}));
  auto lost = renew({tk, tb}, 600s);
  ASSERT_TRUE(lost) << lost.error().describe();
  EXPECT_TRUE(lost->empty());
  EXPECT_EQ(item(kept, "lease_expires_at > now() + interval '590 s'"), "true");
  ASSERT_TRUE(other.exec_simple("ROLLBACK"));
  EXPECT_EQ(item(busy, "lease_expires_at::text"), before);
  // The next renewal finds it free.
  lost = renew({tk, tb}, 600s);
  ASSERT_TRUE(lost);
  EXPECT_TRUE(lost->empty());
  EXPECT_EQ(item(busy, "lease_expires_at > now() + interval '590 s'"), "true");
  // Held by another statement and no longer ours when the renewal began: lost.
  expire_lease(busy);
  ASSERT_EQ(claim_one(ingest_request(busy), "w2", 30s).outcome, claim_outcome::granted);
  ASSERT_TRUE(other.exec_simple("BEGIN"));
  ASSERT_TRUE(other.exec(lock_row, {busy.str()}));
  lost = renew({tb}, 600s);
  ASSERT_TRUE(other.exec_simple("ROLLBACK"));
  ASSERT_TRUE(lost);
  ASSERT_EQ(lost->size(), 1u);
  EXPECT_EQ(lost->front().item, busy);
}
