// The next job in the completion's statement (DESIGN §8), against PostgreSQL: completing an
// ingestion marks its document's matching pending and inserts the matching queue's message (or,
// for SQS, an outbox row) in the same statement; nothing is made for an ingestion that did not
// complete (a failure, a completion fenced out) or when no stage follows. Also the outbox port:
// take holds rows from a second relay, mark_sent/mark_failed, prune by retention.
#include <gtest/gtest.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_matching_repository.hpp"
#include "adapters/db/pg_outbox_repository.hpp"
#include "adapters/db/pg_repository.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;

namespace {

class next_job_test : public ingestd::test::postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    if (HasFatalFailure())
      return;
    intake_repo = std::make_unique<pg_intake_repository>(db->url());
  }

  void TearDown() override {
    intake_repo.reset();
    postgres_test::TearDown();
  }

  std::unique_ptr<pg_repository> repo_with(next_job_options next) {
    pg_repository_options opts;
    opts.next_job = std::move(next);
    return std::make_unique<pg_repository>(db->url(), opts);
  }

  /// A new in-progress ingestion of a new document, claimed: {ingestion, document, token}.
  std::tuple<uuid, uuid, uuid> claimed(pg_repository& repo) {
    intake_request r;
    r.document_id = uuid::v7();
    r.ingestion_id = uuid::v7();
    r.tenant_id = uuid::v4();
    r.content_hash = uuid::v4().str();
    r.file_path = "documents/" + r.document_id.str() + ".pdf";
    r.mime_type = "application/pdf";
    r.uploaded_by = uuid::v4();
    auto made = intake_repo->create_ingestion(r, 30s);
    EXPECT_TRUE(made) << made.error().describe();
    auto token = uuid::v7();
    auto got = await<std::vector<std::optional<claimed_ingestion>>>([&](auto cb) {
      repo.claim({claim_request{made->ingestion_id, token, 3}}, "w1", 300s, cb);
    });
    EXPECT_TRUE(got && got->size() == 1 && got->front());
    return {made->ingestion_id, made->document_id, token};
  }

  result<void> complete(pg_repository& repo, uuid id, uuid token) {
    completion c;
    c.ref = {id, token};
    c.record.structured_data = R"({"invoice_number": "A-1"})";
    auto r = await<std::vector<result<void>>>([&](auto cb) { repo.complete({c}, cb); });
    if (!r)
      return r.error();
    return r->front();
  }

  std::string matching_status(uuid document) {
    return db->scalar("SELECT coalesce(matching_status, 'NULL') FROM document WHERE id = $1", {document.str()});
  }
  int64_t messages(const std::string& queue, uuid document) {
    return std::stoll(db->scalar("SELECT count(*) FROM queue_message WHERE queue_name = $1 AND body = $2",
                                 {queue, document.str()}));
  }
  int64_t outbox_rows(uuid document) {
    return std::stoll(db->scalar("SELECT count(*) FROM event_outbox WHERE body = $1", {document.str()}));
  }

  std::unique_ptr<pg_intake_repository> intake_repo;
};

TEST_F(next_job_test, a_completion_makes_the_matching_job_on_the_postgres_queue) {
  auto repo = repo_with({"match-q", false});
  auto [id, document, token] = claimed(*repo);
  auto r = complete(*repo, id, token);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(matching_status(document), "pending");
  EXPECT_EQ(messages("match-q", document), 1);
  EXPECT_EQ(outbox_rows(document), 0);
}

TEST_F(next_job_test, on_sqs_the_matching_job_is_an_outbox_row) {
  auto repo = repo_with({"match-q", true});
  auto [id, document, token] = claimed(*repo);
  ASSERT_TRUE(complete(*repo, id, token));
  EXPECT_EQ(matching_status(document), "pending");
  EXPECT_EQ(messages("match-q", document), 0);
  EXPECT_EQ(outbox_rows(document), 1);
  EXPECT_EQ(db->scalar("SELECT destination FROM event_outbox WHERE body = $1", {document.str()}), "match-q");
}

TEST_F(next_job_test, nothing_is_made_without_a_next_stage_or_for_an_ingestion_that_did_not_complete) {
  auto off = repo_with({});
  auto [id, document, token] = claimed(*off);
  ASSERT_TRUE(complete(*off, id, token));
  EXPECT_EQ(matching_status(document), "NULL");
  EXPECT_EQ(std::stoll(db->scalar("SELECT count(*) FROM queue_message")), 0);

  auto repo = repo_with({"match-q", false});
  // Fenced out: a completion with a stale token writes nothing, so no next job either.
  auto [id2, document2, token2] = claimed(*repo);
  lease_ref second{id2, token2};
  auto stale = complete(*repo, id2, uuid::v7());
  ASSERT_FALSE(stale);
  EXPECT_TRUE(stale.error().claim_lost());
  EXPECT_EQ(matching_status(document2), "NULL");
  EXPECT_EQ(messages("match-q", document2), 0);
  // A failure makes none.
  auto failed = await<failure_outcome>([&](auto cb) {
    repo->record_failure(second, failure_record{error::make_permanent("x", "bad"), 3, ""}, 0s, cb);
  });
  ASSERT_TRUE(failed) << failed.error().describe();
  EXPECT_TRUE(failed->failed);
  EXPECT_EQ(matching_status(document2), "NULL");
  EXPECT_EQ(messages("match-q", document2), 0);
}

TEST_F(next_job_test, a_reprocessed_document_is_matched_again_and_a_running_match_is_fenced_out) {
  auto repo = repo_with({"match-q", false});
  auto [id, document, token] = claimed(*repo);
  ASSERT_TRUE(complete(*repo, id, token));
  db->query("UPDATE document SET matching_status = 'in-progress', matching_attempts = 1, "
            "matching_claim_token = gen_random_uuid() WHERE id = $1",
            {document.str()});
  // A second ingestion of the same document completes: matching starts over.
  db->query("INSERT INTO ingestion (id, document_id, uploaded_by) VALUES ($1, $2, gen_random_uuid())",
            {uuid::v7().str(), document.str()});
  auto second = db->scalar("SELECT id FROM ingestion WHERE document_id = $1 AND status = 'in-progress'",
                           {document.str()});
  auto token2 = uuid::v7();
  auto got = await<std::vector<std::optional<claimed_ingestion>>>([&](auto cb) {
    repo->claim({claim_request{*uuid::parse(second), token2, 3}}, "w1", 300s, cb);
  });
  ASSERT_TRUE(got && got->front());
  ASSERT_TRUE(complete(*repo, *uuid::parse(second), token2));
  EXPECT_EQ(matching_status(document), "pending");
  EXPECT_EQ(db->scalar("SELECT matching_attempts || ' ' || (matching_claim_token IS NULL) FROM document WHERE id = $1",
                       {document.str()}),
            "0 true");
  EXPECT_EQ(messages("match-q", document), 2);
}

TEST_F(next_job_test, a_pending_document_whose_message_was_lost_is_rescued_once) {
  auto repo = repo_with({"match-q", false});
  pg_matching_repository matching{db->url()};
  auto [id, doc, token] = claimed(*repo);
  ASSERT_TRUE(complete(*repo, id, token));
  auto document = doc;
  auto rescue = [&](std::chrono::seconds threshold) {
    auto r = await<std::vector<uuid>>([&](auto cb) { matching.rescue_stranded("match-q", threshold, 100, cb); });
    EXPECT_TRUE(r) << r.error().describe();
    return r ? *r : std::vector<uuid>{};
  };
  auto age = [&] {
    db->query("UPDATE document SET matching_message_seen_at = now() - interval '2 hours' WHERE id = $1",
              {document.str()});
  };
  age();
  // Its message waits in the match queue: nothing to rescue.
  EXPECT_TRUE(rescue(3600s).empty());
  // Dead-lettered while the document is pending: rescued, then seen, so not again at once.
  db->query("UPDATE queue_message SET queue_name = 'match-q-dlq' WHERE queue_name = 'match-q'");
  EXPECT_EQ(rescue(3600s), std::vector<uuid>{document});
  EXPECT_TRUE(rescue(3600s).empty());
  // Seen recently (a claim, a renewal, a give-back or a back-off): not lost.
  age();
  EXPECT_TRUE(rescue(3 * 3600s).empty());
  // Not pending: never.
  db->query("UPDATE document SET matching_status = 'succeeded' WHERE id = $1", {document.str()});
  age();
  EXPECT_TRUE(rescue(3600s).empty());
}

TEST_F(next_job_test, the_outbox_holds_taken_rows_marks_them_and_prunes_sent_ones) {
  pg_outbox_repository outbox{db->url()};
  for (int i = 0; i < 3; ++i)
    db->query("INSERT INTO event_outbox (destination, body) VALUES ('q', $1)", {std::to_string(i)});
  auto first = await<std::vector<outbox_row>>([&](auto cb) { outbox.take(2, 60s, {}, cb); });
  ASSERT_TRUE(first) << first.error().describe();
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ(first->at(0).body, "0");
  // A second relay gets only the row nobody holds.
  auto second = await<std::vector<outbox_row>>([&](auto cb) { outbox.take(10, 60s, {}, cb); });
  ASSERT_TRUE(second);
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ(second->at(0).body, "2");
  ASSERT_TRUE(await<void>([&](auto cb) { outbox.mark_sent({first->at(0).id, first->at(1).id}, cb); }));
  ASSERT_TRUE(await<void>([&](auto cb) { outbox.mark_failed({second->at(0).id}, "queue refused", cb); }));
  EXPECT_EQ(db->scalar("SELECT last_error FROM event_outbox WHERE body = '2'"), "queue refused");
  // The failed row is free again at once; the sent ones never come back.
  auto again = await<std::vector<outbox_row>>([&](auto cb) { outbox.take(10, 60s, {}, cb); });
  ASSERT_TRUE(again);
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(again->at(0).body, "2");
  db->query("UPDATE event_outbox SET sent_at = now() - interval '2 hours' WHERE body = '0'");
  auto pruned = await<int64_t>([&](auto cb) { outbox.prune(3600s, cb); });
  ASSERT_TRUE(pruned);
  EXPECT_EQ(*pruned, 1);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM event_outbox"), "2");
}

} // namespace
