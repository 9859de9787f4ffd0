// pg_intake_repository on a fresh schema: intake writes the document (deduplicated by tenant and
// content), the ingestion, its work item and its queue message in one statement (the large
// class's queue, containers to the unpack queue, an outbox row on SQS); a retried intake creates
// nothing new; bad input is refused with nothing written; and the status look-ups and figures
// (ingestions by status, failures by class, skips, the review backlog, matching from the
// document_matching view).
#include "tests/integration/db/work_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::work_test;
using test::ingest_queue;
using test::ingest_request;
using test::large_queue;

namespace {

class intake_repository_test : public work_test {};

} // namespace

TEST_F(intake_repository_test,
       intake_deduplicates_documents_and_writes_each_ingestions_work_and_message) {
  auto first = intake("hash-1");
  auto a = intake_repo->create_ingestion(first, 30s);
  ASSERT_TRUE(a) << a.error().describe();
  EXPECT_TRUE(a->document_created);
  EXPECT_TRUE(a->ingestion_created);
  EXPECT_EQ(a->document_id, first.document_id);
  EXPECT_EQ(a->ingestion_id, first.ingestion_id);
  EXPECT_EQ(a->file_path, first.file_path);
  EXPECT_EQ(item(first.ingestion_id,
                 "stage || ' ' || status || ' ' || document_id || ' ' || tenant_id || ' ' || "
                 "priority || ' ' || size_class || ' ' || attempt_count || ' ' || "
                 "(claim_token IS NULL)"),
            "ingest in-progress " + first.document_id.str() + " " + first.tenant_id.str()
                + " 50 small 0 true");
  EXPECT_EQ(messages(first.ingestion_id, ingest_queue), 1);
  EXPECT_EQ(ingestion(first.ingestion_id, "status || ' ' || (source_metadata->>'channel')"),
            "in-progress test");

  auto second = intake("hash-1");
  auto b = intake_repo->create_ingestion(second, 30s);
  ASSERT_TRUE(b) << b.error().describe();
  EXPECT_FALSE(b->document_created);
  EXPECT_TRUE(b->ingestion_created);
  EXPECT_EQ(b->document_id, first.document_id);
  EXPECT_EQ(b->file_path, first.file_path);
  EXPECT_EQ(
      count("SELECT count(*) FROM ingestion WHERE document_id = $1", {first.document_id.str()}), 2);
  EXPECT_EQ(item(second.ingestion_id, "document_id"), first.document_id.str());
  EXPECT_EQ(messages(second.ingestion_id, ingest_queue), 1);

  // A retried intake (same ingestion id) creates nothing new: no ingestion, work or message.
  auto again = intake_repo->create_ingestion(second, 30s);
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_FALSE(again->document_created);
  EXPECT_FALSE(again->ingestion_created);
  EXPECT_EQ(again->document_id, first.document_id);
  EXPECT_EQ(count("SELECT count(*) FROM ingestion"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM work_item"), 2);
  EXPECT_EQ(messages(second.ingestion_id), 1);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message"), 2);
  // Even after its work was claimed and finished.
  ASSERT_TRUE(complete_ingestion(test::completing(claimed(second.ingestion_id))));
  ASSERT_TRUE(intake_repo->create_ingestion(second, 30s));
  EXPECT_EQ(item(second.ingestion_id, "status"), "completed");
  EXPECT_EQ(messages(second.ingestion_id), 1);

  // Another tenant with the same content gets its own document.
  auto other = intake("hash-1", uuid::v4());
  auto c = intake_repo->create_ingestion(other, 30s);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->document_created);
  EXPECT_EQ(item(other.ingestion_id, "tenant_id"), other.tenant_id.str());
  // The stream: a document added (twice: two tenants), three ingestions queued.
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
                  "(body::jsonb)->>'type' = "
                  "'DOCUMENT_ADDED'"),
            2);
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
                  "(body::jsonb)->>'type' = "
                  "'INGESTION_QUEUED'"),
            3);
}

TEST_F(intake_repository_test, the_class_the_stage_the_priority_and_the_queue_go_with_the_work) {
  auto large = intake(uuid::v4().str());
  large.size_class = "large";
  large.queue = large_queue;
  large.priority = 7;
  ASSERT_TRUE(intake_repo->create_ingestion(large, 30s));
  EXPECT_EQ(item(large.ingestion_id, "stage || ' ' || size_class || ' ' || priority"),
            "ingest large 7");
  EXPECT_EQ(db->scalar("SELECT queue_name || ' ' || priority FROM queue_message WHERE body = $1",
                       {large.ingestion_id.str()}),
            "ingest-large-q 7");
  // A container: the unpack stage's work on the unpack queue.
  auto zip = intake(uuid::v4().str());
  zip.stage = "unpack";
  zip.queue = test::unpack_queue;
  zip.mime_type = "application/zip";
  ASSERT_TRUE(intake_repo->create_ingestion(zip, 30s));
  EXPECT_EQ(item(zip.ingestion_id, "stage || ' ' || size_class"), "unpack small");
  EXPECT_EQ(messages(zip.ingestion_id, test::unpack_queue), 1);
  EXPECT_EQ(messages(zip.ingestion_id), 1);
  // An empty stage is the ingest stage.
  auto plain = intake(uuid::v4().str());
  plain.stage = "";
  ASSERT_TRUE(intake_repo->create_ingestion(plain, 30s));
  EXPECT_EQ(item(plain.ingestion_id, "stage"), "ingest");
  // The schema checks the priority's range: nothing is written.
  auto bad = intake(uuid::v4().str());
  bad.priority = 101;
  EXPECT_FALSE(intake_repo->create_ingestion(bad, 30s));
  EXPECT_EQ(count("SELECT count(*) FROM document WHERE id = $1", {bad.document_id.str()}), 0);
}

TEST_F(intake_repository_test, on_sqs_the_first_message_is_an_outbox_row) {
  pg_intake_repository sqs{db->url(), true};
  auto r = intake(uuid::v4().str());
  r.priority = 12;
  ASSERT_TRUE(sqs.create_ingestion(r, 30s));
  EXPECT_EQ(messages(r.ingestion_id), 0);
  EXPECT_EQ(
      db->scalar(
          "SELECT destination || ' ' || priority || ' ' || (sent_at IS NULL) FROM event_outbox "
          "WHERE body = $1",
          {r.ingestion_id.str()}),
      "ingest-q 12 true");
}

TEST_F(intake_repository_test,
       the_document_the_ingestion_the_work_and_the_message_are_one_statement) {
  // The message is refused (a deployment's constraint): nothing of the intake is kept.
  db->query(
      "ALTER TABLE queue_message ADD CONSTRAINT test_no_ingest CHECK (queue_name <> 'ingest-q')");
  auto r = intake(uuid::v4().str());
  auto refused = intake_repo->create_ingestion(r, 30s);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "pg.23514") << refused.error().describe();
  EXPECT_EQ(count("SELECT count(*) FROM document"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM ingestion"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM work_item"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox"), 0);
  db->query("ALTER TABLE queue_message DROP CONSTRAINT test_no_ingest");
  auto made = intake_repo->create_ingestion(r, 30s);
  ASSERT_TRUE(made) << made.error().describe();
  EXPECT_TRUE(made->document_created && made->ingestion_created);
  EXPECT_EQ(messages(r.ingestion_id, ingest_queue), 1);
}

TEST_F(intake_repository_test, bad_input_is_refused_as_permanent_and_nothing_is_written) {
  auto both = intake("h");
  both.doc_source_id = uuid::v4();
  auto res = intake_repo->create_ingestion(both, 30s);
  ASSERT_FALSE(res);
  EXPECT_TRUE(res.error().permanent());
  auto bad_json = intake("h2");
  bad_json.source_metadata = "{not json";
  res = intake_repo->create_ingestion(bad_json, 30s);
  ASSERT_FALSE(res);
  EXPECT_TRUE(res.error().permanent());
  auto no_hash = intake("");
  res = intake_repo->create_ingestion(no_hash, 30s);
  ASSERT_FALSE(res);
  EXPECT_TRUE(res.error().permanent());
  auto bad_stage = intake("h3");
  bad_stage.stage = "bogus";
  res = intake_repo->create_ingestion(bad_stage, 30s);
  ASSERT_FALSE(res);
  EXPECT_TRUE(res.error().permanent()) << res.error().describe();
  for (auto table : {"document", "ingestion", "work_item", "queue_message", "event_outbox"})
    EXPECT_EQ(count(std::string{"SELECT count(*) FROM "} + table), 0) << table;
}

TEST_F(intake_repository_test, concurrent_intake_of_the_same_content_makes_one_document) {
  std::vector<intake_request> requests;
  requests.reserve(8);
  for (int i = 0; i < 8; ++i)
    requests.push_back(intake("same-content"));
  pg_intake_repository other{db->url()};
  std::vector<std::thread> threads;
  std::vector<std::optional<result<intake_result>>> results(requests.size());
  for (size_t i = 0; i < requests.size(); ++i)
    threads.emplace_back([&, i] {
      intake_repository& r = i % 2 == 0 ? static_cast<intake_repository&>(*intake_repo) : other;
      results[i].emplace(r.create_ingestion(requests[i], 30s));
    });
  for (auto& t : threads)
    t.join();
  int created = 0;
  std::set<uuid> documents;
  for (auto& r : results) {
    ASSERT_TRUE(*r) << (*r).error().describe();
    created += (*r)->document_created ? 1 : 0;
    documents.insert((*r)->document_id);
  }
  EXPECT_EQ(created, 1);
  EXPECT_EQ(documents.size(), 1u);
  EXPECT_EQ(count("SELECT count(*) FROM ingestion"), 8);
  EXPECT_EQ(
      count("SELECT count(*) FROM work_item WHERE document_id = $1", {documents.begin()->str()}),
      8);
  EXPECT_EQ(count("SELECT count(DISTINCT body) FROM queue_message"), 8);
}

TEST_F(intake_repository_test, find_and_summarize_for_status) {
  auto ok = new_ingestion();
  auto bad = new_ingestion();
  auto busy = new_ingestion();
  auto crashed = new_ingestion();
  auto cancelled_id = new_ingestion();
  ASSERT_TRUE(complete_ingestion(test::completing(claimed(ok))));
  ASSERT_TRUE(fail(claimed(bad), error::make_permanent("llm.context_length_exceeded", "too long")));
  db->query("UPDATE ingestion SET created_at = now() - interval '100 s' WHERE id = $1",
            {busy.str()});
  claimed(crashed);
  expire_lease(crashed);
  auto poisoned = claim_one(ingest_request(crashed, uuid::v7(), 1));
  ASSERT_EQ(poisoned.outcome, claim_outcome::finished);
  ASSERT_EQ(intake_repo->cancel_ingestion(cancelled_id, std::nullopt, "t", 30s)->outcome,
            cancel_outcome::cancelled);
  auto held = claimed(busy, "w9");

  auto s = intake_repo->summarize(30s);
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(s->in_progress, 1);
  EXPECT_EQ(s->completed, 1);
  EXPECT_EQ(s->failed, 2);
  EXPECT_EQ(s->cancelled, 1);
  EXPECT_EQ(s->skipped, 0);
  EXPECT_GE(s->oldest_in_progress_seconds, 100);
  EXPECT_LT(s->oldest_in_progress_seconds, 200);
  std::map<std::string, int64_t> by_class(s->failures_by_error_class.begin(),
                                          s->failures_by_error_class.end());
  EXPECT_EQ(by_class, (std::map<std::string, int64_t>{{"permanent", 1}, {"poison", 1}}));
  EXPECT_EQ(s->documents_needing_review, 2);

  auto f = intake_repo->find_ingestion(bad, 30s);
  ASSERT_TRUE(f && *f);
  EXPECT_EQ((*f)->status, "failed");
  EXPECT_EQ((*f)->attempt_count, 1);
  EXPECT_EQ((*f)->error_class, "permanent");
  EXPECT_EQ((*f)->last_error, "llm.context_length_exceeded: too long");
  EXPECT_TRUE((*f)->needs_human_review);
  EXPECT_FALSE((*f)->claimed);
  auto g = intake_repo->find_ingestion(ok, 30s);
  ASSERT_TRUE(g && *g);
  EXPECT_EQ((*g)->document_structured_data, R"({"invoice_number": "A-1"})");
  auto h = intake_repo->find_ingestion(busy, 30s);
  ASSERT_TRUE(h && *h);
  EXPECT_TRUE((*h)->claimed);
  EXPECT_EQ((*h)->claimed_by, "w9");
  EXPECT_EQ((*h)->status, "in-progress");
  expire_lease(busy);
  h = intake_repo->find_ingestion(busy, 30s);
  ASSERT_TRUE(h && *h);
  EXPECT_FALSE((*h)->claimed);
  (void)held;
  auto missing = intake_repo->find_ingestion(uuid::v7(), 30s);
  ASSERT_TRUE(missing);
  EXPECT_FALSE(*missing);
  EXPECT_TRUE(intake_repo->ping(30s));
}

TEST_F(intake_repository_test, the_matching_figures_come_from_the_document_matching_view) {
  // Four documents whose matching is pending, in progress (for 11 minutes), succeeded and failed,
  // and one never queued for matching.
  std::vector<uuid> docs;
  for (int i = 0; i < 5; ++i) {
    auto id = new_ingestion();
    auto doc = document_of(id);
    docs.push_back(doc);
    auto c = test::completing(claimed(id));
    if (i < 4)
      c.work.next.push_back(
          next_work{doc, "match", doc, tenant_of(id), 50, "small", test::match_queue, true});
    ASSERT_TRUE(complete_ingestion(c));
  }
  auto match = [&](uuid doc) {
    claim_request r;
    r.item = doc;
    r.token = uuid::v7();
    r.stage = "match";
    auto a = claim_one(r, "m1");
    EXPECT_EQ(a.outcome, claim_outcome::granted);
    return a.work.ref();
  };
  match(docs[1]);
  db->query("UPDATE work_item SET started_at = now() - interval '11 minutes' WHERE id = $1",
            {docs[1].str()});
  ASSERT_TRUE(await<std::vector<result<void>>>(
      [&](auto cb) { work->complete({work_outcome{match(docs[2])}}, cb); }));
  ASSERT_TRUE(fail(match(docs[3]), error::make_permanent("match.bad_edge", "x")));

  auto expected = std::map<std::string, int64_t>{
      {"pending", 1}, {"in-progress", 1}, {"succeeded", 1}, {"failed", 1}};
  for (auto* what : {"summarize", "summarize_matching"}) {
    SCOPED_TRACE(what);
    auto s = std::string{what} == "summarize" ? intake_repo->summarize(30s)
                                              : intake_repo->summarize_matching(30s);
    ASSERT_TRUE(s) << s.error().describe();
    std::map<std::string, int64_t> by_status(s->matching_by_status.begin(),
                                             s->matching_by_status.end());
    EXPECT_EQ(by_status, expected);
    EXPECT_EQ(s->matching_in_progress_over_10_minutes, 1);
    EXPECT_GE(s->oldest_matching_in_progress_seconds, 660);
    EXPECT_LT(s->oldest_matching_in_progress_seconds, 760);
  }
  // The match stage's items are not ingestions: the ingestion figures count five completed.
  auto s = intake_repo->summarize(30s);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->completed, 5);
  EXPECT_EQ(s->in_progress, 0);
  EXPECT_EQ(s->failed, 0);
  EXPECT_TRUE(s->failures_by_error_class.empty());
  auto labels = intake_repo->document_labels(docs, 30s);
  ASSERT_TRUE(labels) << labels.error().describe();
  std::map<uuid, std::string> status_of;
  for (auto& l : *labels)
    status_of[l.id] = l.matching_status;
  EXPECT_EQ(status_of[docs[0]], "pending");
  EXPECT_EQ(status_of[docs[1]], "in-progress");
  EXPECT_EQ(status_of[docs[2]], "succeeded");
  EXPECT_EQ(status_of[docs[3]], "failed");
  EXPECT_EQ(status_of[docs[4]], "");
}

TEST_F(intake_repository_test,
       retry_reopens_failed_items_with_a_message_an_audit_row_and_an_event) {
  auto bad = new_ingestion();
  auto large = new_ingestion("large");
  auto fine = new_ingestion();
  ASSERT_TRUE(fail(claimed(bad), error::make_permanent("ocr.corrupt_file", "not a PDF")));
  auto large_claim = claim_one(ingest_request(large, uuid::v7(), 3, "large"));
  ASSERT_EQ(large_claim.outcome, claim_outcome::granted) << large_claim.detail;
  ASSERT_TRUE(fail(large_claim.work.ref(), error::make_permanent("ocr.corrupt_file", "big")));
  ASSERT_TRUE(complete_ingestion(test::completing(claimed(fine))));
  auto sent_before = messages(bad, ingest_queue);

  // Nothing of another stage, or failed later than now, or an id with nothing failed.
  retry_request none;
  none.queues = {{"ingest", ingest_queue}, {"ingest.large", large_queue}};
  none.stage = "match";
  EXPECT_TRUE(intake_repo->retry_failed(none, 30s)->empty());
  none.stage.clear();
  none.since = "2999-01-01T00:00:00Z";
  EXPECT_TRUE(intake_repo->retry_failed(none, 30s)->empty());
  none.since.clear();
  none.ids = {fine};
  EXPECT_TRUE(intake_repo->retry_failed(none, 30s)->empty());

  // Every failed item; the large class has no queue here, so it stays failed and is reported.
  retry_request all;
  all.queues = {{"ingest", ingest_queue}};
  all.who = "cli:op";
  auto r = intake_repo->retry_failed(all, 30s);
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ(r->at(0).id, bad);
  EXPECT_TRUE(r->at(0).sent);
  EXPECT_EQ(r->at(0).stage, "ingest");
  EXPECT_NE(r->at(0).last_error.find("ocr.corrupt_file"), std::string::npos);
  EXPECT_EQ(r->at(1).id, large);
  EXPECT_FALSE(r->at(1).sent);
  EXPECT_EQ(item(bad, "status || ' ' || attempt_count || ' ' || (last_error IS NULL) || ' ' || "
                      "(claim_token IS NULL) || ' ' || (completed_at IS NULL)"),
            "in-progress 0 true true true");
  EXPECT_EQ(ingestion(bad, "status"), "in-progress");
  EXPECT_EQ(messages(bad, ingest_queue), sent_before + 1);
  EXPECT_EQ(count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND step = "
                  "'retry' AND outcome = 'requested' AND worker_id = 'cli:op' AND detail LIKE "
                  "'%after 1 attempt(s)%ocr.corrupt_file%'",
                  {bad.str()}),
            1);
  EXPECT_EQ(events(bad, "RETRY_REQUESTED"), 1);
  EXPECT_EQ(item(large, "status"), "failed");
  EXPECT_EQ(events(large, "RETRY_REQUESTED"), 0);

  // The large one by its id, its queue given, through the outbox (SQS).
  retry_request by_id;
  by_id.ids = {large};
  by_id.queues = {{"ingest.large", large_queue}};
  by_id.via_outbox = true;
  r = intake_repo->retry_failed(by_id, 30s);
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_TRUE(r->at(0).sent);
  EXPECT_EQ(outbox_rows(large, large_queue), 1);
  EXPECT_EQ(item(large, "status || ' ' || size_class"), "in-progress large");
  // Nothing is failed any more.
  EXPECT_TRUE(intake_repo->retry_failed(all, 30s)->empty());
}

TEST_F(intake_repository_test, a_redrive_resends_work_in_progress_and_leaves_finished_work_alone) {
  auto open = new_ingestion();
  auto done = new_ingestion();
  auto bad = new_ingestion();
  ASSERT_TRUE(complete_ingestion(test::completing(claimed(done))));
  ASSERT_TRUE(fail(claimed(bad), error::make_permanent("ocr.corrupt_file", "not a PDF")));
  auto open_sent = messages(open, ingest_queue);
  auto done_sent = messages(done, ingest_queue);

  retry_request req;
  req.ids = {open, done, bad};
  req.stage = "ingest";
  req.queues = {{"ingest", ingest_queue}};
  req.redrive = true;
  req.who = "cli:op";
  auto r = intake_repo->retry_failed(req, 30s);
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->size(), 3u);
  std::map<std::string, std::pair<std::string, bool>> by_id;
  for (const auto& item : *r)
    by_id[item.id.str()] = {item.status, item.sent};
  EXPECT_EQ(by_id[open.str()], std::make_pair(std::string{"in-progress"}, true));
  EXPECT_EQ(by_id[done.str()], std::make_pair(std::string{"completed"}, false));
  EXPECT_EQ(by_id[bad.str()], std::make_pair(std::string{"failed"}, true));
  // In progress: one more message, nothing else touched; finished: nothing; failed: started over.
  EXPECT_EQ(messages(open, ingest_queue), open_sent + 1);
  EXPECT_EQ(messages(done, ingest_queue), done_sent);
  EXPECT_EQ(item(bad, "status || ' ' || attempt_count"), "in-progress 0");
  EXPECT_EQ(count("SELECT count(*) FROM ingestion_event WHERE step = 'redrive' AND outcome = "
                  "'requested' AND ingestion_id IN ($1, $2)",
                  {open.str(), bad.str()}),
            2);
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
                  "body::jsonb->>'type' = 'RETRY_REQUESTED' AND "
                  "body::jsonb->'payload'->>'via' = 'redrive'"),
            2);
}
