// Cancellation in the database: the cancel statement on a queued, a running, a finished and
// another tenant's ingestion with its audit events; the heartbeat's look-up of cancel requests;
// the fenced `cancelled` outcome; the claim answered finished on a cancelled item; the status
// counts; the document left alone.
#include <gtest/gtest.h>

#include "tests/integration/db/work_fixture.hpp"

using namespace ingestd;
using namespace ingestd::test;
using namespace std::chrono_literals;

namespace {

class cancel_repository_test : public work_test {
protected:
  cancel_result cancel(uuid id, std::optional<uuid> tenant = std::nullopt) {
    auto r = intake_repo->cancel_ingestion(id, tenant, "test", 30s);
    EXPECT_TRUE(r) << r.error().describe();
    return r ? *r : cancel_result{};
  }

  std::vector<uuid> requests(std::vector<uuid> ids) {
    auto r = await<std::vector<uuid>>([&](auto cb) { work->cancel_requests(ids, cb); });
    EXPECT_TRUE(r) << r.error().describe();
    return r ? *r : std::vector<uuid>{};
  }

  int64_t cancel_events(uuid id, const std::string& outcome) {
    return count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND step = 'cancel' "
                 "AND outcome = $2 AND worker_id = 'test'",
                 {id.str(), outcome});
  }
};

} // namespace

TEST_F(cancel_repository_test,
       a_queued_ingestion_is_cancelled_at_once_and_its_message_finds_it_finished) {
  auto id = new_ingestion();
  auto r = cancel(id);
  EXPECT_EQ(r.outcome, cancel_outcome::cancelled);
  EXPECT_EQ(r.status, "in-progress");
  EXPECT_EQ(item(id, "status || ' ' || last_error || ' ' || (completed_at IS NOT NULL) || ' ' || "
                     "(cancel_requested_at IS NOT NULL)"),
            "cancelled cancelled true true");
  EXPECT_EQ(ingestion(id, "status || ' ' || (completed_at IS NOT NULL)"), "cancelled true");
  EXPECT_EQ(cancel_events(id, "cancelled"), 1);
  EXPECT_EQ(events(id, "INGESTION_CANCELLED"), 1);
  // Its message, when it comes, finds it final.
  auto a = claim_one(ingest_request(id));
  EXPECT_EQ(a.outcome, claim_outcome::finished);
  EXPECT_EQ(a.detail, "cancelled");
  // Again: said so, nothing more recorded.
  EXPECT_EQ(cancel(id).outcome, cancel_outcome::already_cancelled);
  EXPECT_EQ(cancel_events(id, "cancelled"), 1);
  EXPECT_EQ(events(id, "INGESTION_CANCELLED"), 1);
  // The status figures count it.
  auto summary = intake_repo->summarize(30s);
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->cancelled, 1);
  EXPECT_EQ(summary->in_progress, 0);
}

TEST_F(cancel_repository_test, a_running_ingestion_gets_a_request_then_its_job_records_the_cancel) {
  auto id = new_ingestion();
  auto other = new_ingestion();
  auto ref = claimed(id);
  claimed(other);
  EXPECT_TRUE(requests({id, other}).empty());
  auto r = cancel(id);
  EXPECT_EQ(r.outcome, cancel_outcome::cancelling);
  EXPECT_EQ(item(id, "status || ' ' || (cancel_requested_at IS NOT NULL)"), "in-progress true");
  EXPECT_EQ(cancel_events(id, "requested"), 1);
  EXPECT_EQ(requests({id, other}), std::vector<uuid>{id});
  // Asking again while it runs is the same request, from the first time.
  auto first_request = item(id, "cancel_requested_at");
  EXPECT_EQ(cancel(id).outcome, cancel_outcome::cancelling);
  EXPECT_EQ(item(id, "cancel_requested_at"), first_request);
  // Fenced: a stale token records nothing.
  auto stale = cancelled(claim_ref{id, uuid::v7()});
  ASSERT_FALSE(stale);
  EXPECT_TRUE(stale.error().claim_lost());
  EXPECT_EQ(item(id, "status"), "in-progress");
  ASSERT_TRUE(cancelled(ref, {audit_row(id, "cancel", "ok", "stopped at the step boundary")}));
  EXPECT_EQ(item(id, "status || ' ' || (claim_token IS NULL AND lease_expires_at IS NULL)"),
            "cancelled true");
  EXPECT_EQ(events(id, "INGESTION_CANCELLED"), 1);
  EXPECT_TRUE(requests({id}).empty());
}

TEST_F(cancel_repository_test, an_expired_claim_counts_as_queued) {
  auto id = new_ingestion();
  claimed(id);
  expire_lease(id);
  EXPECT_EQ(cancel(id).outcome, cancel_outcome::cancelled);
  EXPECT_EQ(item(id, "status || ' ' || (claim_token IS NULL)"), "cancelled true");
}

TEST_F(cancel_repository_test, finished_unknown_other_tenants_and_other_stages_items_are_refused) {
  auto id = new_ingestion();
  ASSERT_TRUE(complete_ingestion(completing(claimed(id))));
  auto r = cancel(id);
  EXPECT_EQ(r.outcome, cancel_outcome::finished);
  EXPECT_EQ(r.status, "completed");
  EXPECT_EQ(item(id, "status"), "completed");
  EXPECT_EQ(cancel_events(id, "cancelled") + cancel_events(id, "requested"), 0);
  auto failed = new_ingestion();
  ASSERT_TRUE(fail(claimed(failed), error::make_permanent("x", "y")));
  EXPECT_EQ(cancel(failed).outcome, cancel_outcome::finished);
  EXPECT_EQ(cancel(uuid::v7()).outcome, cancel_outcome::not_found);
  auto theirs = new_ingestion();
  EXPECT_EQ(cancel(theirs, uuid::v4()).outcome, cancel_outcome::not_found);
  EXPECT_EQ(item(theirs, "status"), "in-progress");
  EXPECT_EQ(cancel(theirs, tenant_).outcome, cancel_outcome::cancelled);
  // A document's matching is not an ingestion: its id cancels nothing.
  auto ingested = new_ingestion();
  auto doc = document_of(ingested);
  ASSERT_TRUE(
      complete_ingestion(completing(claimed(ingested), "{}", std::pair{doc, tenant_of(ingested)})));
  EXPECT_EQ(cancel(doc).outcome, cancel_outcome::not_found);
  EXPECT_EQ(item(doc, "status"), "in-progress");
}

TEST_F(cancel_repository_test, a_cancelled_ingestion_leaves_its_documents_data_alone) {
  auto id = new_ingestion();
  db->query("UPDATE document SET structured_data = '{\"a\": 1}', needs_human_review = false, "
            "updated_at = now() - interval '1 hour' WHERE id = $1",
            {document_of(id).str()});
  cancel(id);
  EXPECT_EQ(document(id, "structured_data::text"), "{\"a\": 1}");
  EXPECT_EQ(document(id, "needs_human_review"), "false");
  EXPECT_EQ(document(id, "updated_at > now() - interval '1 minute'"), "true");
}
