// pg_ingest_repository on a fresh schema: the ingestion's details, its transcription and the
// output kept for a reviewer (each fenced by the work item's claim), and its completion: the
// result, the work item completed with its audit trail and the document's matching added with
// its message (reopened when it existed), in one transaction; completions and transcriptions that
// arrive while one is written go together; a batch refused for one item's values is retried item
// by item; a statement or a COMMIT whose answer is lost with the connection is read again, not
// redone.
#include <limits>

#include "tests/integration/db/work_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using namespace std::string_literals;
using ingestd::test::await;
using ingestd::test::completing;
using ingestd::test::work_test;
using test::cut_euro;
using test::fffd;
using test::ingest_request;
using test::match_queue;

namespace {

class ingest_test : public work_test {
protected:
  result<ingestion_details> load(uuid id) {
    return await<ingestion_details>([&](auto cb) { ingest->load(id, cb); });
  }
  result<void> record(claim_ref ref, transcription_record tr) {
    return await<void>([&](auto cb) { ingest->record_transcription(ref, std::move(tr), cb); });
  }
  result<void> keep(claim_ref ref, std::string data) {
    return await<void>([&](auto cb) { ingest->keep_output(ref, std::move(data), cb); });
  }
  /// The completion of `ref` with its document's matching next.
  ingest_completion with_matching(claim_ref ref,
                                  std::string data = R"({"invoice_number": "A-1"})") {
    return completing(ref, std::move(data), std::pair{document_of(ref.item), tenant_of(ref.item)});
  }
  std::vector<result<void>> complete_all(std::vector<ingest_completion> cs,
                                         pg_ingest_repository* r = nullptr) {
    auto& target = r != nullptr ? *r : *ingest;
    auto res
        = await<std::vector<result<void>>>([&](auto cb) { target.complete(std::move(cs), cb); });
    EXPECT_TRUE(res) << res.error().describe();
    return res ? *res : std::vector<result<void>>{};
  }
  /// The match stage's claim of a document's matching.
  claim_answer claim_matching(uuid document, const std::string& worker = "m1") {
    claim_request r;
    r.item = document;
    r.token = uuid::v7();
    r.stage = "match";
    return claim_one(r, worker);
  }
  /// The document's matching status ("none" without a matching row).
  std::string matching(uuid document) {
    return db->scalar("SELECT COALESCE((SELECT matching_status::text FROM document_matching "
                      "WHERE document_id = $1), 'none')",
                      {document.str()});
  }
  /// Its matching's attempts ("none" without a matching row).
  std::string matching_attempts(uuid document) {
    return db->scalar("SELECT COALESCE((SELECT matching_attempts::text FROM document_matching "
                      "WHERE document_id = $1), 'none')",
                      {document.str()});
  }
};

} // namespace

// -- reads and writes after the claim ----------------------------------------------------------

TEST_F(ingest_test, load_answers_the_ingestion_its_document_and_the_providers_chosen) {
  auto id = new_ingestion();
  auto d = load(id);
  ASSERT_TRUE(d) << d.error().describe();
  EXPECT_EQ(d->file_path, "documents/" + document_of(id).str() + ".pdf");
  EXPECT_EQ(d->mime_type, "application/pdf");
  EXPECT_EQ(d->transcription_file_path, "");
  EXPECT_EQ(d->transcription_provider, "");
  EXPECT_EQ(d->extraction_provider, "");
  db->query("UPDATE ingestion SET transcription_provider = 'document_ai', extraction_provider = "
            "'llm' WHERE id = $1",
            {id.str()});
  d = load(id);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->transcription_provider, "document_ai");
  EXPECT_EQ(d->extraction_provider, "llm");
  auto unknown = load(uuid::v7());
  ASSERT_FALSE(unknown);
  EXPECT_TRUE(unknown.error().permanent());
  EXPECT_EQ(unknown.error().code, "ingest.unknown");
}

TEST_F(ingest_test, loads_arriving_while_one_runs_go_in_one_statement_and_each_gets_its_own) {
  std::vector<uuid> ids;
  ids.reserve(20);
  for (int i = 0; i < 20; ++i)
    ids.push_back(new_ingestion());
  auto locker = session();
  ASSERT_TRUE(locker->exec_simple("BEGIN"));
  ASSERT_TRUE(locker->exec_simple("LOCK TABLE ingestion IN ACCESS EXCLUSIVE MODE"));
  test::answers<ingestion_details> got;
  ingest->load(ids[0], got.slot(ids[0].str()));
  ASSERT_TRUE(adapter_waits_for_a_lock());
  for (size_t i = 1; i < ids.size(); ++i)
    ingest->load(ids[i], got.slot(ids[i].str()));
  auto unknown = uuid::v7();
  ingest->load(unknown, got.slot("unknown"));
  ASSERT_TRUE(locker->exec_simple("ROLLBACK"));
  ASSERT_TRUE(got.wait_for(ids.size() + 1));
  EXPECT_EQ(ingest->statements().loads, 2u);
  for (auto& id : ids) {
    auto d = got.at(id.str());
    ASSERT_TRUE(d) << d.error().describe();
    EXPECT_EQ(d->file_path, "documents/" + document_of(id).str() + ".pdf");
  }
  auto u = got.at("unknown");
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().code, "ingest.unknown");
}

TEST_F(ingest_test,
       a_transcription_is_recorded_under_the_claim_and_found_again_by_the_next_holder) {
  auto id = new_ingestion();
  auto ref = claimed(id);
  transcription_record tr{"ingestions/t/transcription-output.json", "ingestions/t/preprocessed.png",
                          0.4, 3, "document_ai"};
  ASSERT_TRUE(record(ref, tr));
  EXPECT_EQ(ingestion(id, "transcription_file_path"), tr.transcription_file_path);
  // What it cost, for the usage figures.
  EXPECT_EQ(ingestion(id, "transcribed_pages || ' ' || transcribed_by"), "3 document_ai");
  EXPECT_EQ(ingestion(id, "preprocessed_file_path"), tr.preprocessed_file_path);
  EXPECT_EQ(ingestion(id, "transcription_quality_score::float8"), "0.4");
  // Without a preprocessed image: NULL.
  ASSERT_TRUE(record(ref, transcription_record{"ingestions/t/transcription-output.json", "", 0.9}));
  EXPECT_EQ(ingestion(id, "preprocessed_file_path IS NULL"), "true");
  // Its holder crashed: the next holder resumes from the stored transcription.
  expire_lease(id);
  ASSERT_EQ(claim_one(ingest_request(id), "w2").outcome, claim_outcome::granted);
  auto d = load(id);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->transcription_file_path, tr.transcription_file_path);
  // The crashed holder's token writes nothing.
  auto stale = record(ref, transcription_record{"ingestions/other.json", "", 0.1});
  ASSERT_FALSE(stale);
  EXPECT_TRUE(stale.error().claim_lost());
  EXPECT_EQ(ingestion(id, "transcription_file_path"), tr.transcription_file_path);
}

TEST_F(ingest_test, transcriptions_arriving_while_one_is_written_go_in_one_statement_each_fenced) {
  constexpr int n = 40;
  std::vector<claim_ref> held;
  held.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    held.push_back(claimed(new_ingestion()));
  // Another session holds the table: the first UPDATE waits while the other calls arrive.
  auto locker = session();
  ASSERT_TRUE(locker->exec_simple("BEGIN"));
  ASSERT_TRUE(locker->exec_simple("LOCK TABLE ingestion IN ACCESS EXCLUSIVE MODE"));
  test::answers<void> got;
  auto path = [](uuid id) { return "ingestions/" + id.str() + "/transcription-output.json"; };
  ingest->record_transcription(held[0], {path(held[0].item), "", 0.9},
                               got.slot(held[0].item.str()));
  ASSERT_TRUE(adapter_waits_for_a_lock());
  for (int i = 1; i < n; ++i)
    ingest->record_transcription(held[i], {path(held[i].item), "", 0.9},
                                 got.slot(held[i].item.str()));
  ingest->record_transcription(claim_ref{held[1].item, uuid::v7()},
                               {"ingestions/wrong.json", "", 0.1},
                               got.slot("wrong token")); // fenced out, alone
  ASSERT_TRUE(locker->exec_simple("ROLLBACK"));
  ASSERT_TRUE(got.wait_for(n + 1));
  for (auto& ref : held) {
    auto r = got.at(ref.item.str());
    EXPECT_TRUE(r) << r.error().describe();
    EXPECT_EQ(ingestion(ref.item, "transcription_file_path"), path(ref.item));
  }
  auto fenced = got.at("wrong token");
  ASSERT_FALSE(fenced);
  EXPECT_TRUE(fenced.error().claim_lost());
  EXPECT_EQ(ingest->statements().transcriptions, 2u);
}

TEST_F(ingest_test, a_transcription_record_the_database_refuses_fails_alone) {
  std::vector<claim_ref> refs;
  refs.reserve(6);
  for (int i = 0; i < 6; ++i)
    refs.push_back(claimed(new_ingestion()));
  // The first record is written alone while another session holds the table; the others arrive
  // meanwhile and go together in the next statement.
  auto locker = session();
  ASSERT_TRUE(locker->exec_simple("BEGIN"));
  ASSERT_TRUE(locker->exec_simple("LOCK TABLE ingestion IN ACCESS EXCLUSIVE MODE"));
  test::answers<void> got;
  auto rec = [&](size_t i, std::string path) {
    ingest->record_transcription(refs[i], transcription_record{std::move(path), "", 0.8},
                                 got.slot(std::to_string(i)));
  };
  rec(0, "ingestions/0/transcription-output.json");
  ASSERT_TRUE(adapter_waits_for_a_lock());
  rec(1, "ingestions/1/transcription-output.json");
  rec(2, "ingestions/2/\0.json"s); // a NUL cuts the array parameter: a malformed literal
  rec(3, "ingestions/3/" + cut_euro + ".json");
  rec(4, "ingestions/4/transcription-output.json");
  rec(5, "ingestions/5/transcription-output.json");
  ASSERT_TRUE(locker->exec_simple("ROLLBACK"));
  ASSERT_TRUE(got.wait_for(6));
  for (size_t i : {0u, 1u, 4u, 5u}) {
    auto r = got.at(std::to_string(i));
    EXPECT_TRUE(r) << i << ": " << r.error().describe();
    EXPECT_EQ(ingestion(refs[i].item, "transcription_file_path"),
              "ingestions/" + std::to_string(i) + "/transcription-output.json");
  }
  // A storage key is not cleaned (it would name another object): the record fails, alone.
  for (size_t i : {2u, 3u}) {
    auto r = got.at(std::to_string(i));
    ASSERT_FALSE(r) << i;
    EXPECT_TRUE(r.error().permanent()) << r.error().describe();
    EXPECT_EQ(ingestion(refs[i].item, "transcription_file_path IS NULL"), "true");
  }
}

TEST_F(ingest_test, output_kept_for_the_reviewer_goes_to_the_document_when_the_ingestion_fails) {
  auto id = new_ingestion();
  auto ref = claimed(id);
  ASSERT_TRUE(keep(ref, R"({"total": 120, "vendor": "ACME\u0000 GmbH"})"));
  EXPECT_EQ(ingestion(id, "structured_data->>'total' || ' ' || valid_structured_data"),
            "120 false");
  EXPECT_EQ(ingestion(id, "structured_data->>'vendor'"), "ACME GmbH");
  // Not JSON: nothing a reviewer could read, nothing stored, no error.
  ASSERT_TRUE(keep(ref, "{not json"));
  EXPECT_EQ(ingestion(id, "structured_data->>'total'"), "120");
  // In progress, the document is not touched.
  EXPECT_EQ(document(id, "structured_data IS NULL AND NOT needs_human_review"), "true");
  auto stale = keep(claim_ref{id, uuid::v7()}, R"({"total": 1})");
  ASSERT_FALSE(stale);
  EXPECT_TRUE(stale.error().claim_lost());
  ASSERT_TRUE(
      fail(ref, error::make_permanent("extraction.gate_failed", "totals do not reconcile")));
  EXPECT_EQ(document(id, "structured_data->>'total' || ' ' || needs_human_review"), "120 true");
}

// -- the completion --------------------------------------------------------------------------

TEST_F(ingest_test,
       a_completion_writes_the_result_completes_the_item_and_adds_the_documents_matching) {
  auto id = new_ingestion();
  auto doc = document_of(id);
  auto ref = claimed(id);
  auto c = with_matching(ref);
  c.work.audit = {test::audit_row(id, "extract", "ok"), test::audit_row(id, "complete", "ok")};
  c.work.next.front().priority = 30;
  ASSERT_TRUE(complete_ingestion(c));
  EXPECT_EQ(
      ingestion(
          id,
          "structured_data->>'invoice_number' || ' ' || valid_structured_data || ' ' || "
          "extraction_input_tokens || ' ' || extraction_output_tokens || ' ' || extraction_model"),
      "A-1 true 1200 300 local-rules");
  EXPECT_EQ(ingestion(id, "status || ' ' || (completed_at IS NOT NULL)"), "completed true");
  EXPECT_EQ(
      item(id,
           "status || ' ' || (claim_token IS NULL) || ' ' || (lease_expires_at IS NULL) || ' ' || "
           "(completed_at IS NOT NULL)"),
      "completed true true true");
  EXPECT_EQ(document(id, "structured_data->>'invoice_number' || ' ' || needs_human_review"),
            "A-1 false");
  EXPECT_EQ(
      db->scalar(
          "SELECT string_agg(step, ',' ORDER BY id) FROM ingestion_event WHERE ingestion_id = $1",
          {id.str()}),
      "extract,complete");
  // The document's matching: a work item of the match stage with its message.
  EXPECT_EQ(item(doc, "stage || ' ' || document_id || ' ' || tenant_id || ' ' || status || ' ' || "
                      "priority || ' ' "
                      "|| size_class || ' ' || attempt_count"),
            "match " + doc.str() + " " + tenant_of(id).str() + " in-progress 30 small 0");
  EXPECT_EQ(db->scalar("SELECT queue_name || ' ' || priority FROM queue_message WHERE body = $1",
                       {doc.str()}),
            "match-q 30");
  EXPECT_EQ(outbox_rows(doc), 0);
  EXPECT_EQ(matching(doc), "pending");
  EXPECT_EQ(matching_attempts(doc), "0");
  // The stream: completed, processed.
  EXPECT_EQ(events(id, "INGESTION_COMPLETED"), 1);
  EXPECT_EQ(events(id, "DOCUMENT_PROCESSED"), 1);
  EXPECT_EQ(
      db->scalar(
          "SELECT ((body::jsonb)->'payload'->>'valid_structured_data') || ' ' || "
          "((body::jsonb)->'payload'->>'model') FROM event_outbox WHERE destination = 'events' "
          "AND (body::jsonb)->>'type' = 'INGESTION_COMPLETED'"),
      "true local-rules");
  EXPECT_EQ(
      db->scalar("SELECT (body::jsonb)->'payload'->>'needs_human_review' FROM event_outbox "
                 "WHERE destination = 'events' AND (body::jsonb)->>'type' = 'DOCUMENT_PROCESSED'"),
      "false");
}

TEST_F(ingest_test, on_sqs_the_matchings_message_is_an_outbox_row) {
  pg_ingest_options opts;
  opts.via_outbox = true;
  pg_ingest_repository sqs{db->url(), opts};
  auto id = new_ingestion();
  auto doc = document_of(id);
  auto r = complete_all({with_matching(claimed(id))}, &sqs);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_TRUE(r[0]) << r[0].error().describe();
  EXPECT_EQ(messages(doc), 0);
  EXPECT_EQ(
      db->scalar(
          "SELECT destination || ' ' || priority || ' ' || (sent_at IS NULL) FROM event_outbox "
          "WHERE body = $1",
          {doc.str()}),
      "match-q 50 true");
  EXPECT_EQ(matching(doc), "pending");
}

TEST_F(ingest_test,
       nothing_is_added_without_a_next_stage_or_for_an_ingestion_that_did_not_complete) {
  auto off = new_ingestion();
  ASSERT_TRUE(complete_ingestion(completing(claimed(off))));
  EXPECT_EQ(matching(document_of(off)), "none");
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE queue_name = $1", {match_queue}), 0);

  // Fenced out: a completion with a stale token writes nothing, so no next work either.
  auto id = new_ingestion();
  auto ref = claimed(id);
  auto stale = complete_ingestion(with_matching(claim_ref{id, uuid::v7()}));
  ASSERT_FALSE(stale);
  EXPECT_TRUE(stale.error().claim_lost());
  EXPECT_EQ(matching(document_of(id)), "none");
  EXPECT_EQ(ingestion(id, "structured_data IS NULL"), "true");
  // A failure adds none.
  auto failed = fail(ref, error::make_permanent("x", "bad"));
  ASSERT_TRUE(failed) << failed.error().describe();
  EXPECT_TRUE(failed->failed);
  EXPECT_EQ(matching(document_of(id)), "none");
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE queue_name = $1", {match_queue}), 0);
}

TEST_F(ingest_test, a_document_matched_before_is_matched_again_and_a_running_match_is_fenced_out) {
  auto first = intake("matched-twice");
  ASSERT_TRUE(intake_repo->create_ingestion(first, 30s));
  auto doc = first.document_id;
  ASSERT_TRUE(complete_ingestion(with_matching(claimed(first.ingestion_id))));
  // Its matching ran, failed once, and runs again.
  auto m1 = claim_matching(doc);
  ASSERT_EQ(m1.outcome, claim_outcome::granted);
  ASSERT_TRUE(fail(m1.work.ref(), error::make_transient("llm.http_503", "busy"), 3, 0s));
  auto m2 = claim_matching(doc);
  ASSERT_EQ(m2.outcome, claim_outcome::granted);
  EXPECT_EQ(matching(doc), "in-progress");
  EXPECT_EQ(matching_attempts(doc), "2");
  // A second ingestion of the same document completes: matching starts over.
  auto second = intake("matched-twice");
  ASSERT_TRUE(intake_repo->create_ingestion(second, 30s));
  ASSERT_EQ(document_of(second.ingestion_id), doc);
  ASSERT_TRUE(complete_ingestion(with_matching(claimed(second.ingestion_id))));
  EXPECT_EQ(item(doc, "status || ' ' || attempt_count || ' ' || crash_count || ' ' || (claim_token "
                      "IS NULL) || ' ' "
                      "|| (last_error IS NULL) || ' ' || (error_class IS NULL) || ' ' || "
                      "(completed_at IS NULL)"),
            "in-progress 0 0 true true true true");
  EXPECT_EQ(matching(doc), "pending");
  EXPECT_EQ(matching_attempts(doc), "0");
  EXPECT_EQ(messages(doc, match_queue), 2);
  // The running match is fenced out.
  auto lost = await<std::vector<result<void>>>(
      [&](auto cb) { work->complete({work_outcome{m2.work.ref()}}, cb); });
  ASSERT_TRUE(lost);
  ASSERT_FALSE(lost->at(0));
  EXPECT_TRUE(lost->at(0).error().claim_lost());
  // A matching that failed for good is reopened too.
  auto m3 = claim_matching(doc);
  ASSERT_EQ(m3.outcome, claim_outcome::granted);
  ASSERT_TRUE(fail(m3.work.ref(), error::make_permanent("match.bad_edge", "x")));
  EXPECT_EQ(matching(doc), "failed");
  auto third = intake("matched-twice");
  ASSERT_TRUE(intake_repo->create_ingestion(third, 30s));
  ASSERT_TRUE(complete_ingestion(with_matching(claimed(third.ingestion_id))));
  EXPECT_EQ(matching(doc), "pending");
  EXPECT_EQ(messages(doc, match_queue), 3);
}

TEST_F(ingest_test, next_work_that_exists_and_is_not_reopened_is_left_alone_without_a_message) {
  auto first = intake("existing-next");
  ASSERT_TRUE(intake_repo->create_ingestion(first, 30s));
  auto doc = first.document_id;
  ASSERT_TRUE(complete_ingestion(with_matching(claimed(first.ingestion_id))));
  auto m = claim_matching(doc);
  ASSERT_EQ(m.outcome, claim_outcome::granted);
  auto second = intake("existing-next");
  ASSERT_TRUE(intake_repo->create_ingestion(second, 30s));
  auto c = with_matching(claimed(second.ingestion_id));
  c.work.next.front().reopen = false;
  ASSERT_TRUE(complete_ingestion(c));
  EXPECT_EQ(item(doc, "claim_token"), m.work.token.str());
  EXPECT_EQ(messages(doc, match_queue), 1);
}

TEST_F(ingest_test, the_result_the_completion_the_audit_and_the_next_work_are_one_transaction) {
  auto id = new_ingestion();
  auto doc = document_of(id);
  auto ref = claimed(id);
  auto before = snapshot(id);
  auto outbox_before = count("SELECT count(*) FROM event_outbox");
  // The match queue's message is refused (a deployment's constraint): nothing of the completion
  // is kept.
  db->query(
      "ALTER TABLE queue_message ADD CONSTRAINT test_no_match CHECK (queue_name <> 'match-q')");
  auto refused = complete_ingestion(with_matching(ref));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "pg.23514") << refused.error().describe();
  EXPECT_EQ(snapshot(id), before);
  EXPECT_EQ(audit_rows(id), 0);
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE id = $1", {doc.str()}), 0);
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox"), outbox_before);
  // Nor is it when an audit row is refused.
  db->query("ALTER TABLE queue_message DROP CONSTRAINT test_no_match");
  auto bad_audit = with_matching(ref);
  bad_audit.work.audit.front().at_ms = std::numeric_limits<int64_t>::max();
  auto refused_audit = complete_ingestion(bad_audit);
  ASSERT_FALSE(refused_audit);
  EXPECT_TRUE(refused_audit.error().permanent());
  EXPECT_EQ(snapshot(id), before);
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE id = $1", {doc.str()}), 0);
  // The claim still holds: it completes.
  ASSERT_TRUE(complete_ingestion(with_matching(ref)));
  EXPECT_EQ(item(id, "status"), "completed");
  EXPECT_EQ(messages(doc, match_queue), 1);
}

TEST_F(ingest_test, a_completion_records_the_transcription_it_carries_and_keeps_an_earlier_one) {
  auto a = new_ingestion();
  auto b = new_ingestion();
  auto ra = claimed(a);
  auto rb = claimed(b);
  // b's transcription was recorded by an earlier write; a's travels with its result.
  transcription_record earlier{"ingestions/b/transcription-output.json", "ingestions/b/p.png", 0.7,
                               2, "tesseract"};
  ASSERT_TRUE(record(rb, earlier));
  auto ca = completing(ra);
  ca.record.transcription
      = transcription_record{"ingestions/a/transcription-output.json",
                             "ingestions/a/preprocessed.pdf", 0.4, 3, "document_ai"};
  std::vector<ingest_completion> batch;
  batch.push_back(std::move(ca));
  batch.push_back(completing(rb));
  auto answers = complete_all(std::move(batch));
  ASSERT_EQ(answers.size(), 2u);
  ASSERT_TRUE(answers[0]) << answers[0].error().describe();
  ASSERT_TRUE(answers[1]) << answers[1].error().describe();
  EXPECT_EQ(ingestion(a, "status"), "completed");
  EXPECT_EQ(ingestion(a, "transcription_file_path"), "ingestions/a/transcription-output.json");
  EXPECT_EQ(ingestion(a, "preprocessed_file_path"), "ingestions/a/preprocessed.pdf");
  EXPECT_EQ(ingestion(a, "transcription_quality_score::float8"), "0.4");
  EXPECT_EQ(ingestion(a, "transcribed_pages || ' ' || transcribed_by"), "3 document_ai");
  EXPECT_EQ(ingestion(b, "transcription_file_path"), earlier.transcription_file_path);
  EXPECT_EQ(ingestion(b, "preprocessed_file_path"), earlier.preprocessed_file_path);
  EXPECT_EQ(ingestion(b, "transcribed_pages || ' ' || transcribed_by"), "2 tesseract");
  // One statement for both, with the results.
  EXPECT_EQ(ingest->statements().transcriptions, 1u); // b's earlier record only
  // The document's pages of a paid reader count for its tenant's usage, as a record's do.
  EXPECT_EQ(count("SELECT COALESCE(sum(document_ai_pages), 0) FROM tenant_usage"), 3);
}

TEST_F(ingest_test, a_completion_batch_answers_each_entry) {
  auto a = new_ingestion();
  auto b = new_ingestion();
  auto c = new_ingestion();
  auto e = new_ingestion();
  auto ra = claimed(a), rb = claimed(b), rc = claimed(c), re = claimed(e);
  auto flagged = completing(rb, R"({"total": 3})");
  flagged.record.valid_structured_data = false;
  auto reason = completing(re, "");
  reason.record.review_reason = "text_unavailable: the document has no text";
  reason.work.remark = reason.record.review_reason;
  auto res = complete_all({completing(ra), completing(claim_ref{b, uuid::v7()}),
                           completing(rc, "{broken"), flagged, reason});
  ASSERT_EQ(res.size(), 5u);
  EXPECT_TRUE(res[0]) << res[0].error().describe();
  ASSERT_FALSE(res[1]);
  EXPECT_TRUE(res[1].error().claim_lost());
  ASSERT_FALSE(res[2]);
  EXPECT_TRUE(res[2].error().permanent());
  EXPECT_EQ(res[2].error().code, "pg.invalid_json");
  EXPECT_TRUE(res[3]) << res[3].error().describe();
  EXPECT_TRUE(res[4]) << res[4].error().describe();
  EXPECT_EQ(document(a, "structured_data->>'invoice_number' || ' ' || needs_human_review"),
            "A-1 false");
  EXPECT_EQ(document(b, "structured_data->>'total' || ' ' || needs_human_review"), "3 true");
  EXPECT_EQ(item(c, "status"), "in-progress");
  // A reason for review: completed, not valid, the reason as its last error, the document to
  // review.
  EXPECT_EQ(item(e, "status || ' ' || last_error"),
            "completed text_unavailable: the document has no text");
  EXPECT_EQ(ingestion(e, "valid_structured_data"), "false");
  EXPECT_EQ(document(e, "needs_human_review || ' ' || (structured_data IS NULL)"), "true true");
}

TEST_F(ingest_test, completions_arriving_while_one_is_written_go_in_one_transaction_each_fenced) {
  constexpr int n = 30;
  std::vector<claim_ref> refs;
  std::vector<ingest_completion> completions;
  for (int i = 0; i < n; ++i) {
    refs.push_back(claimed(new_ingestion()));
    completions.push_back(with_matching(refs.back()));
  }
  auto locker = session();
  ASSERT_TRUE(locker->exec_simple("BEGIN"));
  ASSERT_TRUE(locker->exec_simple("LOCK TABLE ingestion IN ACCESS EXCLUSIVE MODE"));
  test::answers<std::vector<result<void>>> got;
  ingest->complete({completions[0]}, got.slot("0"));
  ASSERT_TRUE(adapter_waits_for_a_lock());
  for (int i = 1; i < n; ++i)
    ingest->complete({completions[i]}, got.slot(std::to_string(i)));
  ingest->complete({completing(claim_ref{refs[1].item, uuid::v7()})}, got.slot("stale"));
  ASSERT_TRUE(locker->exec_simple("ROLLBACK"));
  ASSERT_TRUE(got.wait_for(n + 1));
  EXPECT_EQ(ingest->statements().completions, 2u);
  for (int i = 0; i < n; ++i) {
    auto r = got.at(std::to_string(i));
    ASSERT_TRUE(r) << r.error().describe();
    EXPECT_TRUE(r->front()) << i << ": " << r->front().error().describe();
  }
  auto stale = got.at("stale");
  ASSERT_TRUE(stale);
  ASSERT_FALSE(stale->front());
  EXPECT_TRUE(stale->front().error().claim_lost());
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE stage = 'ingest' AND status = 'completed'"),
            n);
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE stage = 'match'"), n);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE queue_name = $1", {match_queue}), n);
}

TEST_F(ingest_test, a_batch_refused_for_one_items_values_is_retried_item_by_item) {
  std::vector<claim_ref> refs;
  refs.reserve(6);
  for (int i = 0; i < 6; ++i)
    refs.push_back(claimed(new_ingestion()));
  // A value the schema refuses (as a constraint of a deployment could): the batch's data error.
  db->query("ALTER TABLE ingestion ADD CONSTRAINT test_model_check "
            "CHECK (extraction_model IS DISTINCT FROM 'refused-model')");
  auto make = [&](size_t i, std::string data, std::string model = "local-rules") {
    auto c = with_matching(refs[i], std::move(data));
    c.record.model = std::move(model);
    return c;
  };
  auto first = completing(claimed(new_ingestion()));
  auto six = std::vector<ingest_completion>{
      make(0, R"({"total": 1})"),
      // jsonb cannot hold \u0000; a text parameter cannot hold a NUL byte.
      make(1, R"({"vendor": "ACME\u0000 GmbH"})", "local\0rules"s),
      // A message cut to a byte count in the middle of a character.
      make(2, R"({"note": "Betrag )" + cut_euro + R"("})", "model " + cut_euro),
      make(3, R"({"total": 3})", "refused-model"), make(4, R"({"total": 4})"),
      make(5, R"({"total": 5})")};
  // A completion runs first and waits for a held table, so that the six arrive while it runs and
  // go in one transaction.
  auto locker = session();
  ASSERT_TRUE(locker->exec_simple("BEGIN"));
  ASSERT_TRUE(locker->exec_simple("LOCK TABLE ingestion IN ACCESS EXCLUSIVE MODE"));
  test::answers<std::vector<result<void>>> got;
  ingest->complete({first}, got.slot("first"));
  ASSERT_TRUE(adapter_waits_for_a_lock());
  ingest->complete(six, got.slot("six"));
  ASSERT_TRUE(locker->exec_simple("ROLLBACK"));
  ASSERT_TRUE(got.wait_for(2));
  // The first alone, the six refused together, then each alone.
  EXPECT_EQ(ingest->statements().completions, 1u + 1u + 6u);
  auto res = got.at("six");
  ASSERT_TRUE(res) << res.error().describe();
  ASSERT_EQ(res->size(), 6u);
  for (size_t i : {0u, 1u, 2u, 4u, 5u}) {
    EXPECT_TRUE(res->at(i)) << i << ": " << res->at(i).error().describe();
    EXPECT_EQ(item(refs[i].item, "status"), "completed") << i;
    EXPECT_EQ(messages(document_of(refs[i].item), match_queue), 1) << i;
  }
  ASSERT_FALSE(res->at(3));
  EXPECT_TRUE(res->at(3).error().permanent());
  EXPECT_EQ(res->at(3).error().code, "pg.23514");
  EXPECT_NE(res->at(3).error().message.find("refused this item's values"), std::string::npos)
      << res->at(3).error().message;
  EXPECT_EQ(item(refs[3].item, "status || ' ' || (claim_token IS NOT NULL)"), "in-progress true");
  EXPECT_EQ(messages(document_of(refs[3].item)), 0);
  // The bad values were cleaned and stored, on the ingestion and (by the trigger) the document.
  EXPECT_EQ(ingestion(refs[1].item, "structured_data->>'vendor'"), "ACME GmbH");
  EXPECT_EQ(ingestion(refs[1].item, "extraction_model"), "localrules");
  EXPECT_EQ(ingestion(refs[2].item, "structured_data->>'note'"), "Betrag " + fffd + fffd);
  EXPECT_EQ(ingestion(refs[2].item, "extraction_model"), "model " + fffd + fffd);
  EXPECT_EQ(document(refs[1].item, "structured_data->>'vendor'"), "ACME GmbH");
}

TEST_F(ingest_test, a_completion_batch_lost_to_the_connection_fails_as_a_whole) {
  // Not a data error: nothing is retried item by item, every caller learns it and retries later.
  pg_ingest_repository unreachable{"postgresql://ingestd@127.0.0.1:1/none?connect_timeout=2"};
  auto a = claimed(new_ingestion());
  auto b = claimed(new_ingestion());
  auto res = complete_all({completing(a, "{}"), completing(b, "{}")}, &unreachable);
  ASSERT_EQ(res.size(), 2u);
  for (auto& r : res) {
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().transient()) << r.error().describe();
  }
  auto load_lost = await<ingestion_details>([&](auto cb) { unreachable.load(a.item, cb); });
  ASSERT_FALSE(load_lost);
  EXPECT_TRUE(load_lost.error().transient());
}

namespace {

/// A session of the schema that is not one of the adapters' (terminate_adapter_backends spares
/// it), for holding locks while their backends are ended.
class bystander {
public:
  explicit bystander(test::pg_schema& db) : conn_(PQconnectdb(db.base_url().c_str())) {
    EXPECT_EQ(PQstatus(conn_), CONNECTION_OK);
    EXPECT_TRUE(run("SELECT set_config('search_path', $1, false)", {db.name()}));
  }
  ~bystander() { PQfinish(conn_); }
  bool run(const std::string& sql, const std::vector<std::string>& params = {}) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (auto& p : params)
      values.push_back(p.c_str());
    auto r = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                          values.data(), nullptr, nullptr, 0);
    auto status = PQresultStatus(r);
    PQclear(r);
    return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
  }

private:
  PGconn* conn_;
};

} // namespace

TEST_F(ingest_test, a_completion_cut_off_by_connection_loss_is_read_again_not_redone) {
  auto id = new_ingestion();
  auto ref = claimed(id);
  // Another session holds the item's row so that the completion is in flight when its backend
  // is terminated.
  bystander holder{*db};
  ASSERT_TRUE(holder.run("BEGIN"));
  ASSERT_TRUE(holder.run("SELECT 1 FROM work_item WHERE id = $1 FOR UPDATE", {id.str()}));
  test::answers<std::vector<result<void>>> got;
  ingest->complete({with_matching(ref)}, got.slot("c"));
  ASSERT_TRUE(adapter_waits_for_a_lock());
  ASSERT_GE(db->terminate_adapter_backends(), 1);
  ASSERT_TRUE(got.wait_for(1));
  holder.run("ROLLBACK");
  auto res = got.at("c");
  ASSERT_TRUE(res) << res.error().describe();
  // Not applied and still ours: a transient error (retry safe), not claim_lost.
  ASSERT_FALSE(res->at(0));
  EXPECT_TRUE(res->at(0).error().transient()) << res->at(0).error().describe();
  EXPECT_EQ(item(id, "status || ' ' || claim_token"), "in-progress " + ref.token.str());
  EXPECT_EQ(messages(document_of(id), match_queue), 0);
  ASSERT_TRUE(complete_ingestion(with_matching(ref)));
  EXPECT_EQ(item(id, "status"), "completed");
  EXPECT_EQ(messages(document_of(id), match_queue), 1);
}

TEST_F(ingest_test, a_commit_whose_answer_is_lost_is_read_again_not_redone) {
  auto id = new_ingestion();
  auto ref = claimed(id);
  // The COMMIT waits: a deferred trigger of the test takes an advisory lock that another session
  // holds, so that the connection can be lost while the COMMIT is in flight.
  db->query("CREATE FUNCTION test_wait_at_commit() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN "
            "PERFORM pg_advisory_xact_lock(hashtext(current_schema())); RETURN NULL; END $fn$");
  db->query("CREATE CONSTRAINT TRIGGER test_commit_waits AFTER UPDATE ON ingestion "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_wait_at_commit()");
  bystander holder{*db};
  ASSERT_TRUE(holder.run("SELECT pg_advisory_lock(hashtext(current_schema()))"));
  test::answers<std::vector<result<void>>> got;
  ingest->complete({with_matching(ref)}, got.slot("c"));
  ASSERT_TRUE(adapter_waits_for_a_lock());
  EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 "
                       "AND wait_event = 'advisory' AND query = 'COMMIT'",
                       {db->name()}),
            "1");
  ASSERT_GE(db->terminate_adapter_backends(), 1);
  ASSERT_TRUE(got.wait_for(1));
  auto res = got.at("c");
  ASSERT_TRUE(res) << res.error().describe();
  ASSERT_FALSE(res->at(0));
  EXPECT_TRUE(res->at(0).error().transient()) << res->at(0).error().describe();
  EXPECT_FALSE(res->at(0).error().claim_lost());
  EXPECT_EQ(item(id, "status || ' ' || claim_token"), "in-progress " + ref.token.str());
  EXPECT_EQ(ingestion(id, "structured_data IS NULL"), "true");
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE stage = 'match'"), 0);
  ASSERT_TRUE(holder.run("SELECT pg_advisory_unlock(hashtext(current_schema()))"));
  ASSERT_TRUE(complete_ingestion(with_matching(ref)));
  EXPECT_EQ(item(id, "status"), "completed");
  EXPECT_EQ(messages(document_of(id), match_queue), 1);
}
