// Cancellation and priority in the database (issue 13, migration 010): the cancel statement on a
// queued, a running, a finished and another tenant's ingestion with its audit events; the
// heartbeat's look-up of cancel requests; the fenced `cancelled` outcome; the claim refused on a
// cancelled ingestion; the status counts; the document trigger; the priority stored by intake.
#include <gtest/gtest.h>

#include "repository_fixture.hpp"

using namespace ingestd;
using namespace ingestd::test;
using namespace std::chrono_literals;

namespace {

class cancel_repository_test : public repository_test {
protected:
  cancel_result cancel(uuid id, std::optional<uuid> tenant = std::nullopt) {
    auto r = intake_repo->cancel_ingestion(id, tenant, "test", 30s);
    EXPECT_TRUE(r) << r.error().describe();
    return r ? *r : cancel_result{};
  }

  std::vector<uuid> requests(std::vector<uuid> ids) {
    auto r = await<std::vector<uuid>>([&](auto cb) { repo->cancel_requests(ids, cb); });
    EXPECT_TRUE(r) << r.error().describe();
    return r ? *r : std::vector<uuid>{};
  }

  result<void> record_cancelled(lease_ref ref) {
    return await<void>([&](auto cb) { repo->record_cancelled(ref, cb); });
  }

  int64_t events(uuid id, const std::string& outcome) {
    return std::stoll(db->scalar("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 "
                                 "AND step = 'cancel' AND outcome = $2",
                                 {id.str(), outcome}));
  }
};

} // namespace

TEST_F(cancel_repository_test, a_queued_ingestion_is_cancelled_at_once_and_no_longer_claimable) {
  auto id = new_ingestion();
  auto r = cancel(id);
  EXPECT_EQ(r.outcome, cancel_outcome::cancelled);
  EXPECT_EQ(r.status, "in-progress");
  EXPECT_EQ(column(id, "status"), "cancelled");
  EXPECT_EQ(column(id, "completed_at IS NOT NULL"), "t");
  EXPECT_EQ(events(id, "cancelled"), 1);
  // Its message, when it comes, finds it final: not claimed, state cancelled.
  EXPECT_FALSE(claim_one(id, uuid::v7()).has_value());
  auto st = await<std::vector<ingestion_state>>([&](auto cb) { repo->states({id}, cb); });
  ASSERT_TRUE(st);
  EXPECT_EQ(st->at(0), ingestion_state::cancelled);
  // Again: said so, nothing more recorded.
  EXPECT_EQ(cancel(id).outcome, cancel_outcome::already_cancelled);
  EXPECT_EQ(events(id, "cancelled"), 1);
  // The status figures count it.
  auto summary = intake_repo->summarize(30s);
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->cancelled, 1);
}

TEST_F(cancel_repository_test, a_running_ingestion_gets_a_request_then_its_job_records_the_cancel) {
  auto id = new_ingestion();
  auto other = new_ingestion();
  auto token = uuid::v7();
  ASSERT_TRUE(claim_one(id, token).has_value());
  ASSERT_TRUE(claim_one(other, uuid::v7()).has_value());
  EXPECT_TRUE(requests({id, other}).empty());
  auto r = cancel(id);
  EXPECT_EQ(r.outcome, cancel_outcome::cancelling);
  EXPECT_EQ(column(id, "status"), "in-progress");
  EXPECT_EQ(events(id, "requested"), 1);
  EXPECT_EQ(requests({id, other}), std::vector<uuid>{id});
  // Asking again while it runs is the same request.
  EXPECT_EQ(cancel(id).outcome, cancel_outcome::cancelling);
  // Fenced: a stale token records nothing.
  auto stale = record_cancelled(lease_ref{id, uuid::v7()});
  ASSERT_FALSE(stale);
  EXPECT_TRUE(stale.error().claim_lost());
  ASSERT_TRUE(record_cancelled(lease_ref{id, token}));
  EXPECT_EQ(column(id, "status"), "cancelled");
  EXPECT_EQ(column(id, "claim_token IS NULL AND lease_expires_at IS NULL"), "t");
  EXPECT_TRUE(requests({id}).empty());
}

TEST_F(cancel_repository_test, an_expired_claim_counts_as_queued) {
  auto id = new_ingestion();
  ASSERT_TRUE(claim_one(id, uuid::v7()).has_value());
  expire_lease(id);
  EXPECT_EQ(cancel(id).outcome, cancel_outcome::cancelled);
  EXPECT_EQ(column(id, "status"), "cancelled");
}

TEST_F(cancel_repository_test, finished_unknown_and_other_tenants_ingestions_are_refused) {
  auto id = new_ingestion();
  auto token = uuid::v7();
  ASSERT_TRUE(claim_one(id, token).has_value());
  db->query("UPDATE ingestion SET status = 'completed', claim_token = NULL WHERE id = $1", {id.str()});
  auto r = cancel(id);
  EXPECT_EQ(r.outcome, cancel_outcome::finished);
  EXPECT_EQ(r.status, "completed");
  EXPECT_EQ(column(id, "status"), "completed");
  EXPECT_EQ(events(id, "cancelled") + events(id, "requested"), 0);
  EXPECT_EQ(cancel(uuid::v7()).outcome, cancel_outcome::not_found);
  auto theirs = new_ingestion();
  EXPECT_EQ(cancel(theirs, uuid::v4()).outcome, cancel_outcome::not_found);
  EXPECT_EQ(column(theirs, "status"), "in-progress");
  EXPECT_EQ(cancel(theirs, tenant_).outcome, cancel_outcome::cancelled);
}

TEST_F(cancel_repository_test, a_cancelled_ingestion_leaves_its_documents_data_alone) {
  auto id = new_ingestion();
  auto doc = db->scalar("SELECT document_id FROM ingestion WHERE id = $1", {id.str()});
  db->query("UPDATE document SET structured_data = '{\"a\": 1}', needs_human_review = false, "
            "updated_at = now() - interval '1 hour' WHERE id = $1",
            {doc});
  cancel(id);
  EXPECT_EQ(db->scalar("SELECT structured_data::text FROM document WHERE id = $1", {doc}), "{\"a\": 1}");
  EXPECT_EQ(db->scalar("SELECT needs_human_review FROM document WHERE id = $1", {doc}), "f");
  EXPECT_EQ(db->scalar("SELECT updated_at > now() - interval '1 minute' FROM document WHERE id = $1", {doc}), "t");
}

TEST_F(cancel_repository_test, intake_stores_the_priority_and_the_schema_checks_its_range) {
  auto req = intake(uuid::v4().str());
  req.priority = 7;
  auto res = intake_repo->create_ingestion(req, 30s);
  ASSERT_TRUE(res) << res.error().describe();
  EXPECT_EQ(column(res->ingestion_id, "priority"), "7");
  EXPECT_EQ(column(new_ingestion(), "priority"), "50");
  auto bad = intake(uuid::v4().str());
  bad.priority = 101;
  EXPECT_FALSE(intake_repo->create_ingestion(bad, 30s));
}
