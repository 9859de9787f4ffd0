// The status event stream in the outbox (migration 009, pg_outbox_repository): every state change
// writes its event in the transaction that makes it, one stream row plus one row per registered
// sink, and the relay's take keeps each document's events in order.
#include <rapidjson/document.h>

#include "adapters/db/pg_outbox_repository.hpp"
#include "tests/integration/db/repository_fixture.hpp"

namespace ingestd::test {

namespace {

struct event_view {
  std::string type;
  std::string document_id;
  std::string ingestion_id;
  std::string payload_field;
};

class events_test : public repository_test {
protected:
  void SetUp() override {
    repository_test::SetUp();
    if (HasFatalFailure())
      return;
    outbox = std::make_unique<pg_outbox_repository>(db->url());
  }
  void TearDown() override {
    outbox.reset();
    repository_test::TearDown();
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
        return v.HasMember(key) && v[key].IsString() ? std::string{v[key].GetString()} : std::string{};
      };
      EXPECT_EQ(str(d, "id").size(), 36u) << e.body;
      EXPECT_FALSE(str(d, "time").empty()) << e.body;
      EXPECT_TRUE(d.HasMember("tenant_id") && d.HasMember("payload") && d["payload"].IsObject()) << e.body;
      std::string value;
      if (!field.empty() && d["payload"].HasMember(field.c_str())) {
        auto& v = d["payload"][field.c_str()];
        value = v.IsString() ? v.GetString() : v.IsBool() ? (v.GetBool() ? "true" : "false") : "";
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

  std::unique_ptr<pg_outbox_repository> outbox;
};

using strings = std::vector<std::string>;

} // namespace

TEST_F(events_test, an_ingestion_s_life_is_told_in_order_in_its_own_transactions) {
  auto req = intake("events-1");
  ASSERT_TRUE(intake_repo->create_ingestion(req, 30s));
  auto id = req.ingestion_id;
  auto token = uuid::v4();
  ASSERT_TRUE(claim_one(id, token));
  // A transient failure: a warning, and the next claim starts it again.
  auto failed = fail({id, token}, error::make_transient("llm.http_503", "busy"));
  ASSERT_TRUE(failed);
  auto token2 = uuid::v4();
  ASSERT_TRUE(claim_one(id, token2, nullptr, 300s, "w2"));
  auto done = await<std::vector<result<void>>>([&](auto cb) { repo->complete({make_completion({id, token2})}, cb); });
  ASSERT_TRUE(done && done->at(0));

  auto events = stream();
  EXPECT_EQ(types(events), strings({"DOCUMENT_ADDED", "INGESTION_QUEUED", "INGESTION_STARTED", "WARNING",
                                    "INGESTION_STARTED", "INGESTION_COMPLETED", "DOCUMENT_PROCESSED"}));
  for (auto& e : events)
    EXPECT_EQ(e.document_id, req.document_id.str()) << e.type;
  EXPECT_EQ(events[1].ingestion_id, id.str());
  EXPECT_EQ(events[0].ingestion_id, "");
  EXPECT_EQ(stream("worker_id")[4].payload_field, "w2");
  // No sink registered: only the stream's rows, written as sent (nothing for a relay to take).
  EXPECT_EQ(db->scalar("SELECT count(*) FROM event_outbox WHERE destination <> 'events' OR sent_at IS NULL"),
            "0");
}

TEST_F(events_test, failures_skips_and_matching_have_their_events) {
  auto failing = intake("events-fail");
  ASSERT_TRUE(intake_repo->create_ingestion(failing, 30s));
  auto token = uuid::v4();
  ASSERT_TRUE(claim_one(failing.ingestion_id, token));
  ASSERT_TRUE(fail({failing.ingestion_id, token}, error::make_permanent("pdf.corrupt", "not a PDF")));
  db->query("UPDATE document SET matching_status = 'pending' WHERE id = $1", {failing.document_id.str()});
  db->query("UPDATE document SET matching_status = 'succeeded' WHERE id = $1", {failing.document_id.str()});
  auto skipped = intake("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
  ASSERT_TRUE(intake_repo->create_ingestion(skipped, 30s));
  db->query("INSERT INTO known_file (hash, algorithm) VALUES ($1, 'sha256')", {skipped.content_hash});
  auto c = claim_one(skipped.ingestion_id, uuid::v4());
  ASSERT_TRUE(c && c->skipped);

  auto with_class = stream("error_class");
  auto with_reason = stream("reason");
  strings got = types(with_class);
  EXPECT_EQ(got, strings({"DOCUMENT_ADDED", "INGESTION_QUEUED", "INGESTION_STARTED", "INGESTION_FAILED",
                          "MATCHING_COMPLETED", "DOCUMENT_ADDED", "INGESTION_QUEUED", "INGESTION_SKIPPED"}));
  EXPECT_EQ(with_class[3].payload_field, "permanent");
  EXPECT_EQ(with_reason[7].payload_field, "known_file");
  EXPECT_EQ(with_reason[7].ingestion_id, skipped.ingestion_id.str());
}

TEST_F(events_test, each_registered_sink_gets_a_row_and_a_document_s_rows_are_taken_in_order) {
  ASSERT_TRUE(await<void>([&](auto cb) { outbox->register_sinks({"webhook", "sqs"}, cb); }));
  ASSERT_TRUE(await<void>([&](auto cb) { outbox->register_sinks({"webhook"}, cb); }));  // idempotent
  auto a = intake("order-a");
  auto b = intake("order-b");
  ASSERT_TRUE(intake_repo->create_ingestion(a, 30s));
  ASSERT_TRUE(intake_repo->create_ingestion(b, 30s));
  // Two events per document and sink.
  EXPECT_EQ(db->scalar("SELECT count(*) FROM event_outbox WHERE destination = 'events:webhook'"), "4");
  EXPECT_EQ(db->scalar("SELECT count(*) FROM event_outbox WHERE destination = 'events:sqs'"), "4");
  EXPECT_EQ(db->scalar("SELECT count(DISTINCT event_id) FROM event_outbox"), "4");

  // A relay without the sqs sink takes only webhook rows; a second relay, holding nothing of a
  // document's first row, does not take its later rows either.
  auto first = await<std::vector<outbox_row>>([&](auto cb) { outbox->take(1, 60s, {"events:webhook"}, cb); });
  ASSERT_TRUE(first);
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ(first->at(0).destination, "events:webhook");
  EXPECT_EQ(first->at(0).ordering_key, a.document_id.str());
  EXPECT_EQ(first->at(0).event_id.size(), 36u);
  auto second = await<std::vector<outbox_row>>([&](auto cb) { outbox->take(10, 60s, {"events:webhook"}, cb); });
  ASSERT_TRUE(second);
  ASSERT_EQ(second->size(), 2u);
  for (auto& row : *second)
    EXPECT_EQ(row.ordering_key, b.document_id.str());
  // The first row given back: both of a's rows go together, in order.
  ASSERT_TRUE(await<void>([&](auto cb) { outbox->mark_failed({first->at(0).id}, "receiver down", cb); }));
  auto again = await<std::vector<outbox_row>>([&](auto cb) { outbox->take(10, 60s, {"events:webhook"}, cb); });
  ASSERT_TRUE(again);
  ASSERT_EQ(again->size(), 2u);
  EXPECT_EQ(again->at(0).id, first->at(0).id);
  EXPECT_LT(again->at(0).id, again->at(1).id);
  EXPECT_EQ(again->at(1).ordering_key, a.document_id.str());
}

TEST_F(events_test, worker_events_are_emitted_and_a_bad_payload_is_refused) {
  ASSERT_TRUE(await<void>([&](auto cb) { outbox->emit("WORKER_STARTED", R"({"worker_id":"w9"})", "worker:w9", cb); }));
  auto bad = await<void>([&](auto cb) { outbox->emit("WORKER_STARTED", "{not json", "worker:w9", cb); });
  ASSERT_FALSE(bad);
  auto events = stream("worker_id");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "WORKER_STARTED");
  EXPECT_EQ(events[0].payload_field, "w9");
  EXPECT_EQ(events[0].document_id, "");
}

} // namespace ingestd::test
