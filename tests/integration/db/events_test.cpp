// The status event stream in the outbox (pg_outbox_repository, the trigger
// ingestd_work_item_changed of migration 015): every state change writes its event in the
// transaction that makes it (a claim INGESTION_STARTED, a retry WARNING, the final statuses
// COMPLETED with DOCUMENT_PROCESSED, FAILED, SKIPPED, CANCELLED, a matching's MATCHING_COMPLETED or
// MATCHING_FAILED), one stream row plus one row per registered sink that takes its type, and the
// relay's take keeps each document's events in order.
#include <map>

#include <rapidjson/document.h>

#include "adapters/db/pg_outbox_repository.hpp"
#include "adapters/db/pg_work.hpp"
#include "adapters/notify/webhook_notifier.hpp"
#include "tests/integration/db/work_fixture.hpp"

namespace ingestd::test {

namespace {

struct event_view {
  std::string type;
  std::string document_id;
  std::string ingestion_id;
  std::string payload_field;
};

class events_test : public work_test {
protected:
  void SetUp() override {
    work_test::SetUp();
    if (HasFatalFailure())
      return;
    outbox = std::make_unique<pg_outbox_repository>(db->url());
  }
  void TearDown() override {
    outbox.reset();
    work_test::TearDown();
  }

  /// The stream's events, oldest first; `field` of each payload when given.
  std::vector<event_view> stream(const std::string& field = "") {
    auto got = await<std::vector<stream_event>>([&](auto cb) { outbox->read_stream(0, 1000, cb); });
    EXPECT_TRUE(got) << got.error().describe();
    std::vector<event_view> out;
    for (auto& e : got ? *got : std::vector<stream_event>{}) {
      rapidjson::Document d;
      d.Parse(e.body.c_str());
      EXPECT_FALSE(d.HasParseError()) << e.body;
      auto str = [&](const rapidjson::Value& v, const char* key) {
        return v.HasMember(key) && v[key].IsString() ? std::string{v[key].GetString()}
                                                     : std::string{};
      };
      EXPECT_EQ(str(d, "id").size(), 36u) << e.body;
      EXPECT_FALSE(str(d, "time").empty()) << e.body;
      EXPECT_TRUE(d.HasMember("tenant_id") && d.HasMember("payload") && d["payload"].IsObject())
          << e.body;
      std::string value;
      if (!field.empty() && d["payload"].HasMember(field.c_str())) {
        auto& v = d["payload"][field.c_str()];
        value = v.IsString() ? v.GetString()
                : v.IsBool() ? (v.GetBool() ? "true" : "false")
                : v.IsInt()  ? std::to_string(v.GetInt())
                : v.IsNull() ? "null"
                             : "";
      }
      out.push_back({str(d, "type"), str(d, "document_id"), str(d, "ingestion_id"), value});
    }
    return out;
  }

  static std::vector<std::string> types(const std::vector<event_view>& events) {
    std::vector<std::string> out;
    out.reserve(events.size());
    for (auto& e : events)
      out.push_back(e.type);
    return out;
  }

  /// The events of the stream after the first `skip`, with `field`.
  std::vector<event_view> since(size_t skip, const std::string& field = "") {
    auto all = stream(field);
    return {all.begin() + static_cast<std::ptrdiff_t>(std::min(skip, all.size())), all.end()};
  }

  claim_ref match_claim(uuid document) {
    claim_request r;
    r.item = document;
    r.token = uuid::v7();
    r.stage = "match";
    auto a = claim_one(r, "m1");
    EXPECT_EQ(a.outcome, claim_outcome::granted) << a.detail;
    return a.work.ref();
  }

  /// A completed ingestion of a new document whose matching is queued: the document.
  uuid matched_document() {
    auto id = new_ingestion();
    auto doc = document_of(id);
    EXPECT_TRUE(complete_ingestion(completing(claimed(id), "{}", std::pair{doc, tenant_of(id)})));
    return doc;
  }

  std::unique_ptr<pg_outbox_repository> outbox;
};

using strings = std::vector<std::string>;

} // namespace

TEST_F(events_test, an_ingestions_life_is_told_in_order_in_its_own_transactions) {
  auto req = intake("events-1");
  ASSERT_TRUE(intake_repo->create_ingestion(req, 30s));
  auto id = req.ingestion_id;
  auto first = claimed(id);
  // A transient failure: a warning, and the next claim starts it again.
  ASSERT_TRUE(fail(first, error::make_transient("llm.http_503", "busy")));
  auto second = claimed(id, "w2");
  ASSERT_TRUE(complete_ingestion(completing(second)));

  auto events = stream();
  EXPECT_EQ(types(events),
            strings({"DOCUMENT_ADDED", "INGESTION_QUEUED", "INGESTION_STARTED", "WARNING",
                     "INGESTION_STARTED", "INGESTION_COMPLETED", "DOCUMENT_PROCESSED"}));
  for (auto& e : events)
    EXPECT_EQ(e.document_id, req.document_id.str()) << e.type;
  EXPECT_EQ(events[0].ingestion_id, "");
  for (size_t i = 1; i < events.size(); ++i)
    EXPECT_EQ(events[i].ingestion_id, id.str()) << events[i].type;
  EXPECT_EQ(stream("worker_id")[4].payload_field, "w2");
  EXPECT_EQ(stream("attempt")[2].payload_field, "1");
  EXPECT_EQ(stream("attempt")[4].payload_field, "2");
  EXPECT_EQ(stream("kind")[3].payload_field, "retry");
  EXPECT_EQ(stream("attempt")[3].payload_field, "1");
  EXPECT_EQ(stream("error_class")[3].payload_field, "transient");
  EXPECT_EQ(stream("error")[3].payload_field, "llm.http_503: busy");
  EXPECT_EQ(stream("valid_structured_data")[5].payload_field, "true");
  EXPECT_EQ(stream("model")[5].payload_field, "local-rules");
  EXPECT_EQ(stream("needs_human_review")[6].payload_field, "false");
  // Renewals, give-backs and transcriptions change no status: no event.
  auto quiet = new_ingestion();
  auto before = stream().size();
  auto ref = claimed(quiet);
  before += 1; // its start
  ASSERT_TRUE(renew({ref}));
  ASSERT_TRUE(await<void>([&](auto cb) {
    ingest->record_transcription(ref, transcription_record{"t.json", "", 0.9}, cb);
  }));
  ASSERT_TRUE(release(ref));
  EXPECT_EQ(stream().size(), before);
  // No sink registered: only the stream's rows, written as sent (nothing for a relay to take).
  EXPECT_EQ(
      count("SELECT count(*) FROM event_outbox WHERE destination <> 'events' OR sent_at IS NULL"),
      0);
}

TEST_F(events_test, failures_crashes_skips_cancellations_and_matching_have_their_events) {
  auto failing = intake("events-fail");
  ASSERT_TRUE(intake_repo->create_ingestion(failing, 30s));
  ASSERT_TRUE(
      fail(claimed(failing.ingestion_id), error::make_permanent("pdf.corrupt", "not a PDF")));
  auto failed = since(0, "error_class");
  ASSERT_EQ(types(failed), strings({"DOCUMENT_ADDED", "INGESTION_QUEUED", "INGESTION_STARTED",
                                    "INGESTION_FAILED"}));
  EXPECT_EQ(failed[3].payload_field, "permanent");
  EXPECT_EQ(stream("attempts")[3].payload_field, "1");
  EXPECT_EQ(stream("error")[3].payload_field, "pdf.corrupt: not a PDF");

  // A crash: a warning when the next claim counts it; the crash at the limit fails as poison.
  auto crashing = new_ingestion();
  auto n = stream().size();
  claimed(crashing);
  expire_lease(crashing);
  ASSERT_EQ(claim_one(ingest_request(crashing, uuid::v7(), 2), "w2").outcome,
            claim_outcome::granted);
  expire_lease(crashing);
  ASSERT_EQ(claim_one(ingest_request(crashing, uuid::v7(), 2), "w3").outcome,
            claim_outcome::finished);
  auto crashes = since(n, "error_class");
  EXPECT_EQ(types(crashes),
            strings({"INGESTION_STARTED", "WARNING", "INGESTION_STARTED", "INGESTION_FAILED"}));
  EXPECT_EQ(crashes[1].payload_field, "null");
  EXPECT_EQ(crashes[3].payload_field, "poison");

  // A known file: skipped.
  auto skipped = intake("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
  ASSERT_TRUE(intake_repo->create_ingestion(skipped, 30s));
  db->query("INSERT INTO known_file (hash, algorithm) VALUES ($1, 'sha256')",
            {skipped.content_hash});
  auto skip = ingest_request(skipped.ingestion_id);
  skip.skip_known_files = true;
  n = stream().size();
  ASSERT_EQ(claim_one(skip).outcome, claim_outcome::finished);
  auto skips = since(n, "reason");
  ASSERT_EQ(types(skips), strings({"INGESTION_SKIPPED"}));
  EXPECT_EQ(skips[0].payload_field, "known_file");
  EXPECT_EQ(skips[0].ingestion_id, skipped.ingestion_id.str());

  // Cancelled while queued, and while running.
  auto queued = new_ingestion();
  auto running = new_ingestion();
  auto ref = claimed(running);
  n = stream().size() - 1; // the running one's start
  ASSERT_EQ(intake_repo->cancel_ingestion(queued, std::nullopt, "op", 30s)->outcome,
            cancel_outcome::cancelled);
  ASSERT_EQ(intake_repo->cancel_ingestion(running, std::nullopt, "op", 30s)->outcome,
            cancel_outcome::cancelling);
  ASSERT_TRUE(cancelled(ref));
  auto cancels = since(n, "attempts");
  EXPECT_EQ(types(cancels),
            strings({"INGESTION_STARTED", "INGESTION_CANCELLED", "INGESTION_CANCELLED"}));
  EXPECT_EQ(cancels[1].ingestion_id, queued.str());
  EXPECT_EQ(cancels[2].ingestion_id, running.str());
  EXPECT_EQ(cancels[2].payload_field, "0");

  // Matching: its end only; its claims, retries and give-backs tell nothing.
  auto doc = matched_document();
  auto doc_failing = matched_document();
  n = stream().size();
  auto m = match_claim(doc);
  ASSERT_TRUE(fail(m, error::make_transient("llm.http_503", "busy"), 3, 0s));
  ASSERT_TRUE(release(match_claim(doc)));
  db->query("UPDATE document SET cluster_id = id WHERE id = $1", {doc.str()});
  auto done = await<std::vector<result<void>>>(
      [&](auto cb) { work->complete({work_outcome{match_claim(doc)}}, cb); });
  ASSERT_TRUE(done && done->at(0));
  auto mf = match_claim(doc_failing);
  ASSERT_TRUE(fail(mf, error::make_transient("llm.http_503", "busy"), 1));
  auto matching = since(n, "cluster_id");
  ASSERT_EQ(types(matching), strings({"MATCHING_COMPLETED", "MATCHING_FAILED"}));
  EXPECT_EQ(matching[0].document_id, doc.str());
  EXPECT_EQ(matching[0].ingestion_id, "");
  EXPECT_EQ(matching[0].payload_field, doc.str());
  auto failure = since(n + 1, "error");
  EXPECT_EQ(failure[0].payload_field, "llm.http_503: busy");
  EXPECT_EQ(since(n + 1, "attempts")[0].payload_field, "1");
  EXPECT_EQ(failure[0].document_id, doc_failing.str());
}

TEST_F(
    events_test,
    each_registered_sink_gets_a_row_of_the_types_it_takes_and_a_documents_rows_are_taken_in_order) {
  ASSERT_TRUE(await<void>([&](auto cb) { outbox->register_sinks({{"webhook"}, {"sqs"}}, cb); }));
  ASSERT_TRUE(
      await<void>([&](auto cb) { outbox->register_sinks({{"webhook"}}, cb); })); // idempotent
  // The failure notifier takes the failure events only.
  ASSERT_TRUE(await<void>([&](auto cb) {
    outbox->register_sinks({{"notify", failure_event_types()}}, cb);
  }));
  auto a = intake("order-a");
  auto b = intake("order-b");
  ASSERT_TRUE(intake_repo->create_ingestion(a, 30s));
  ASSERT_TRUE(intake_repo->create_ingestion(b, 30s));
  // Two events per document and sink that takes every type; none for the notifier.
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'events:webhook'"), 4);
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'events:sqs'"), 4);
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'events:notify'"), 0);
  EXPECT_EQ(count("SELECT count(DISTINCT event_id) FROM event_outbox"), 4);

  // A relay without the sqs sink takes only webhook rows, with the lock of their document: a
  // second relay (another session) does not take that document's later rows, only the other's.
  pg_outbox_repository other_relay{db->url()};
  auto first = await<std::vector<outbox_row>>(
      [&](auto cb) { outbox->take(1, 60s, {"events:webhook"}, cb); });
  ASSERT_TRUE(first);
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ(first->at(0).destination, "events:webhook");
  EXPECT_EQ(first->at(0).ordering_key, a.document_id.str());
  EXPECT_EQ(first->at(0).event_id.size(), 36u);
  auto second = await<std::vector<outbox_row>>(
      [&](auto cb) { other_relay.take(10, 60s, {"events:webhook"}, cb); });
  ASSERT_TRUE(second);
  ASSERT_EQ(second->size(), 2u);
  for (auto& row : *second)
    EXPECT_EQ(row.ordering_key, b.document_id.str());
  // The first row given back: its relay takes both of a's rows, in order.
  auto dead = await<int64_t>(
      [&](auto cb) { outbox->mark_failed({first->at(0).id}, "receiver down", 50, cb); });
  ASSERT_TRUE(dead);
  EXPECT_EQ(*dead, 0);
  auto again = await<std::vector<outbox_row>>(
      [&](auto cb) { outbox->take(10, 60s, {"events:webhook"}, cb); });
  ASSERT_TRUE(again);
  ASSERT_EQ(again->size(), 2u);
  EXPECT_EQ(again->at(0).id, first->at(0).id);
  EXPECT_LT(again->at(0).id, again->at(1).id);
  EXPECT_EQ(again->at(1).ordering_key, a.document_id.str());

  // A failure and a matching failure: a row for every sink, the notifier's among them; a
  // completion: none for the notifier.
  ASSERT_TRUE(fail(claimed(a.ingestion_id), error::make_permanent("pdf.corrupt", "not a PDF")));
  ASSERT_TRUE(complete_ingestion(
      completing(claimed(b.ingestion_id), "{}", std::pair{b.document_id, b.tenant_id})));
  claim_request m;
  m.item = b.document_id;
  m.token = uuid::v7();
  m.stage = "match";
  auto mref = claim_one(m).work.ref();
  ASSERT_TRUE(fail(mref, error::make_permanent("match.bad_edge", "x")));
  auto notify_types = db->query(
      "SELECT (body::jsonb)->>'type' FROM event_outbox WHERE destination = 'events:notify' "
      "ORDER BY id");
  ASSERT_EQ(notify_types.size(), 2u);
  EXPECT_EQ(notify_types[0][0], "INGESTION_FAILED");
  EXPECT_EQ(notify_types[1][0], "MATCHING_FAILED");
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'events:webhook'"),
            count("SELECT count(*) FROM event_outbox WHERE destination = 'events'"));
  // The notifier reads them: each becomes its notice.
  auto bodies
      = db->query("SELECT body FROM event_outbox WHERE destination = 'events:notify' ORDER BY id");
  auto n1 = notice_of_event(bodies[0][0].value_or(""));
  ASSERT_TRUE(n1);
  EXPECT_EQ(n1->ingestion_id, a.ingestion_id.str());
  EXPECT_EQ(n1->stage, "ingest");
  EXPECT_EQ(n1->error_class, "permanent");
  EXPECT_EQ(n1->attempts, 1);
  auto n2 = notice_of_event(bodies[1][0].value_or(""));
  ASSERT_TRUE(n2);
  EXPECT_EQ(n2->stage, "match");
  EXPECT_EQ(n2->document_id, b.document_id.str());
  EXPECT_EQ(n2->error, "match.bad_edge: x");

  // Registering again replaces the types: now every event.
  ASSERT_TRUE(await<void>([&](auto cb) { outbox->register_sinks({{"notify"}}, cb); }));
  ASSERT_TRUE(intake_repo->create_ingestion(intake("order-c"), 30s));
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'events:notify' "
                  "AND (body::jsonb)->>'type' = 'INGESTION_QUEUED'"),
            1);
  // Only known sinks.
  auto unknown = await<void>([&](auto cb) { outbox->register_sinks({{"pager"}}, cb); });
  ASSERT_FALSE(unknown);
}

TEST_F(events_test, a_statement_of_many_items_has_the_same_effects_as_one_of_a_few) {
  // The statement triggers run a firing of up to 100 rows with the plan kept for the session,
  // and plan a larger one for its own row count (migration 030): both ways change the same rows
  // and tell the same events, per document in the same order.
  auto run = [&](int n) {
    std::vector<uuid> ids;
    ids.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      ids.push_back(new_ingestion());
    auto list = pg::uuid_array(ids);
    auto before = stream().size();
    // As a coalesced claim, results write and completion would: one statement each for all.
    db->query("UPDATE work_item SET claim_token = gen_random_uuid(), claimed_by = 'w1', "
              "started_at = now(), lease_expires_at = now() + interval '1 minute' "
              "WHERE id = ANY($1::uuid[])",
              {list});
    db->query("UPDATE ingestion SET structured_data = '{\"invoice_number\": \"A-1\"}', "
              "valid_structured_data = true, extraction_model = 'local-rules' "
              "WHERE id = ANY($1::uuid[])",
              {list});
    db->query("UPDATE work_item SET status = 'completed', completed_at = now(), "
              "claim_token = NULL, lease_expires_at = NULL WHERE id = ANY($1::uuid[])",
              {list});
    EXPECT_EQ(count("SELECT count(*) FROM ingestion WHERE id = ANY($1::uuid[]) "
                    "AND status = 'completed' AND completed_at IS NOT NULL",
                    {list}),
              n);
    EXPECT_EQ(count("SELECT count(*) FROM document AS d JOIN ingestion AS i "
                    "ON i.document_id = d.id WHERE i.id = ANY($1::uuid[]) "
                    "AND d.structured_data ->> 'invoice_number' = 'A-1' "
                    "AND NOT d.needs_human_review",
                    {list}),
              n);
    auto events = since(before);
    EXPECT_EQ(events.size(), static_cast<size_t>(3 * n));
    // Per document: started (the claim's statement), then completed and processed (the
    // completion's), each document's two in order.
    std::map<std::string, strings> of_document;
    for (auto& e : events)
      of_document[e.document_id].push_back(e.type);
    EXPECT_EQ(of_document.size(), static_cast<size_t>(n));
    for (auto& [doc, seen] : of_document)
      EXPECT_EQ(seen, strings({"INGESTION_STARTED", "INGESTION_COMPLETED", "DOCUMENT_PROCESSED"}))
          << doc;
  };
  run(3);
  run(150);
  run(3);
}

TEST_F(events_test, worker_events_are_emitted_and_a_bad_payload_is_refused) {
  ASSERT_TRUE(await<void>(
      [&](auto cb) { outbox->emit("WORKER_STARTED", R"({"worker_id":"w9"})", "worker:w9", cb); }));
  auto bad
      = await<void>([&](auto cb) { outbox->emit("WORKER_STARTED", "{not json", "worker:w9", cb); });
  ASSERT_FALSE(bad);
  auto events = stream("worker_id");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "WORKER_STARTED");
  EXPECT_EQ(events[0].payload_field, "w9");
  EXPECT_EQ(events[0].document_id, "");
}

} // namespace ingestd::test
