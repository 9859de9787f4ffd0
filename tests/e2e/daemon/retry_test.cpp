// `ingestd retry` as an operator runs it: matchings that failed (an LLM matcher refusing the
// key) are matched again by a node with a working matcher, from the stored extractions, without
// any ingestion running again; a failed ingestion is ingested again; every retry leaves its audit
// row and RETRY_REQUESTED event; an id with nothing failed, and bad arguments, are refused.
#include <chrono>
#include <csignal>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"
#include "messages/uuid.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/llm/chat_stub.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

namespace {

int64_t matching(e2e_setup& s, const std::string& status) {
  return s.count("SELECT count(*) FROM document_matching WHERE matching_status = $1", {status});
}

} // namespace

TEST(e2e_daemon_retry,
     failed_matchings_are_matched_again_without_ocr_and_failed_ingestions_ingested_again) {
  e2e_setup s;
  chat_stub stub;
  // Seven invoices of one tenant: the seventh is the first one again, so at least one document
  // has a candidate and asks the LLM matcher, which refuses the key (permanent: no second
  // attempt).
  auto ids = s.add_documents(7, doc_kind::text_pdf, {}, ingestd::uuid::v4().str());
  auto corrupt = s.add_document_bytes("%PDF-1.4 not really", "pdf", "application/pdf");
  ids.push_back(corrupt);
  s.enqueue(ids);
  auto first = s.start({{"INGESTD_MATCHING__PROVIDER", "llm"},
                        {"INGESTD_MATCHING__LLM_MODEL", "unauthorized"},
                        {"INGESTD_EXTRACTION__LLM_BASE_URL", stub.base_url()},
                        {"INGESTD_LLM_API_KEY", "wrong-key"}});
  ASSERT_TRUE(wait_until(
      [&] {
        return s.with_status("completed") == 7 && s.with_status("failed") == 1
               && matching(s, "succeeded") + matching(s, "failed") == 7;
      },
      240s))
      << s.logs();
  stop_cleanly(*first);
  auto failed = matching(s, "failed");
  ASSERT_GE(failed, 1);
  EXPECT_EQ(s.db().scalar("SELECT status FROM ingestion WHERE id = $1::uuid", {corrupt}), "failed");
  // What the ingestions did, to compare after the retry of the matchings.
  const std::string ingest_audit = "SELECT count(*) FROM ingestion_event WHERE ingestion_id IN "
                                   "(SELECT id FROM work_item WHERE "
                                   "stage = 'ingest' AND status = 'completed')";
  auto audited = s.count(ingest_audit);

  // Usage errors, and an id of which nothing failed.
  EXPECT_EQ(run_cli(s, {"retry"}).exit_code, 2);
  EXPECT_EQ(run_cli(s, {"retry", "--failed", ids[0]}).exit_code, 2);
  EXPECT_EQ(run_cli(s, {"retry", "--failed", "--stage", "ocr"}).exit_code, 2);
  EXPECT_EQ(run_cli(s, {"retry", "--failed", "--since", "yesterday"}).exit_code, 2);
  EXPECT_EQ(run_cli(s, {"retry", "not-a-uuid"}).exit_code, 2);
  auto matched = s.db().scalar(
      "SELECT i.id::text FROM ingestion AS i JOIN document_matching AS m USING (document_id) "
      "WHERE m.matching_status = 'succeeded' LIMIT 1");
  auto nothing = run_cli(s, {"retry", matched});
  EXPECT_EQ(nothing.exit_code, 1);
  EXPECT_CONTAINS(nothing.err, "has no failed stage");

  // The failed matchings, with a node whose matcher works (the local one).
  auto retried = run_cli(s, {"retry", "--failed", "--stage", "match", "--since", "1h"});
  ASSERT_EQ(retried.exit_code, 0) << retried.out << retried.err;
  EXPECT_CONTAINS(retried.out, std::to_string(failed) + " item(s) retried");
  EXPECT_CONTAINS(retried.out, "llm.unauthorized");
  EXPECT_EQ(matching(s, "failed"), 0);
  EXPECT_EQ(matching(s, "pending"), failed);
  EXPECT_EQ(s.with_status("failed"), 1) << "--stage match leaves the failed ingestion alone";
  auto second = s.start();
  ASSERT_TRUE(wait_until([&] { return matching(s, "succeeded") == 7; }, 120s)) << s.logs();
  stop_cleanly(*second);
  // No ingestion ran again: their audit trails did not grow, their work items are untouched.
  EXPECT_EQ(s.count(ingest_audit), audited);
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE stage = 'ingest' AND attempt_count > 0 "
                    "AND status = 'completed'"),
            0);
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event WHERE step = 'retry' AND outcome = "
                    "'requested' AND ingestion_id IN (SELECT document_id FROM document_matching)"),
            failed);
  EXPECT_EQ(s.count("SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
                    "body::jsonb->>'type' = 'RETRY_REQUESTED' AND body::jsonb->'payload'->>'stage' "
                    "= 'match'"),
            failed);

  // The failed ingestion, by its id: ingested again (and, its file still corrupt, failed again
  // after one new attempt).
  auto again = run_cli(s, {"retry", "--json", corrupt});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_CONTAINS(again.out, "\"stage\":\"ingest\"");
  EXPECT_CONTAINS(again.out, "\"retried\":true");
  EXPECT_EQ(s.db().scalar("SELECT status FROM ingestion WHERE id = $1::uuid", {corrupt}),
            "in-progress");
  auto third = s.start();
  ASSERT_TRUE(wait_until([&] { return s.with_status("failed") == 1; }, 120s)) << s.logs();
  stop_cleanly(*third);
  EXPECT_EQ(s.db().scalar("SELECT string_agg(step || ':' || outcome, ',' ORDER BY id) FROM "
                          "ingestion_event WHERE ingestion_id = $1::uuid AND step = 'retry'",
                          {corrupt}),
            "retry:requested");
  EXPECT_EQ(
      s.db().scalar("SELECT attempt_count::text FROM work_item WHERE id = $1::uuid", {corrupt}),
      "1");
}

TEST(e2e_daemon_retry, a_dead_letter_queue_is_redriven_into_its_stage) {
  e2e_setup s;
  // One ingestion that completes and one that fails (a corrupt file), by a first node.
  auto done = s.add_documents(1, doc_kind::text_pdf).front();
  auto corrupt = s.add_document_bytes("%PDF-1.4 not really", "pdf", "application/pdf");
  s.enqueue({done, corrupt});
  auto first = s.start();
  ASSERT_TRUE(wait_until(
      [&] { return s.with_status("completed") == 1 && s.with_status("failed") == 1; }, 120s))
      << s.logs();
  stop_cleanly(*first);
  // An ingestion in progress whose message died, added while no node (no sweeper) runs.
  auto open = s.add_documents(1, doc_kind::text_pdf).front();
  // The dead-letter queue holds a message for each, and one that names no work item.
  const auto dlq = s.queue_name() + "-dlq";
  s.db().query("INSERT INTO queue_message (id, queue_name, body) SELECT gen_random_uuid(), $1, b "
               "FROM unnest($2::text[]) AS b",
               {dlq, pg_array({done, corrupt, open, "not-a-work-item"})});

  EXPECT_EQ(run_cli(s, {"queues", "redrive", "nowhere"}).exit_code, 2);
  auto r = run_cli(s, {"queues", "redrive", "ingest"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err; // one message left behind
  EXPECT_CONTAINS(r.out, "1 failed item(s) started over, 1 in progress sent again, 1 finished "
                         "(dropped), 1 left in "
                             + dlq);
  EXPECT_CONTAINS(r.err, "names no work item");
  EXPECT_EQ(
      s.db().scalar("SELECT string_agg(body, ',') FROM queue_message WHERE queue_name = $1", {dlq}),
      "not-a-work-item");
  EXPECT_EQ(s.db().scalar("SELECT status FROM ingestion WHERE id = $1::uuid", {corrupt}),
            "in-progress");

  // A node takes the work: the open one completes, the corrupt one fails again.
  auto second = s.start();
  ASSERT_TRUE(wait_until(
      [&] { return s.with_status("completed") == 2 && s.with_status("failed") == 1; }, 120s))
      << s.logs();
  stop_cleanly(*second);
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event WHERE step = 'redrive' AND outcome = "
                    "'requested'"),
            2);
  EXPECT_EQ(s.count("SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
                    "body::jsonb->>'type' = 'RETRY_REQUESTED' AND "
                    "body::jsonb->'payload'->>'via' = 'redrive'"),
            2);
}
