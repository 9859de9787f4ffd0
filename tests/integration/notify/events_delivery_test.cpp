// The status event stream end to end below the daemon: events written by state changes in
// PostgreSQL, the relay actor (real actor system), and its sinks: the signed webhook against the
// local receiver (tests/support/llm/chat_stub.py, which checks signatures with Python's hmac),
// down for a while and then receiving every event exactly once, in order per document; the failure
// notifier (registered for the failure events only) posting a Slack-compatible message for a failed
// ingestion and a failed matching and nothing else; and the SQS sink against fauxqs.
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "actors/relay.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_outbox_repository.hpp"
#include "adapters/http/curl_engine.hpp"
#include "adapters/notify/event_webhook_sink.hpp"
#include "adapters/notify/queue_event_sink.hpp"
#include "adapters/notify/webhook_notifier.hpp"
#include "tests/support/fauxqs/fauxqs_fixture.hpp"
#include "tests/support/llm/chat_stub.hpp"
#include "tests/support/llm/stub_client.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until)
      return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

result<http_response> post_sync(http_client& http, const std::string& url) {
  auto p = std::make_shared<std::promise<result<http_response>>>();
  auto f = p->get_future();
  http_request req;
  req.method = "POST";
  req.url = url;
  req.total_timeout = 5s;
  http.submit(std::move(req), [p](result<http_response> r) { p->set_value(std::move(r)); });
  if (f.wait_for(10s) != std::future_status::ready)
    return error::make_transient("test.timeout", "no answer from " + url);
  return f.get();
}

/// Documents whose ingestions are queued, started and completed: five events each, the
/// documents' events interleaved in the outbox. Their work items change as a worker's claim and
/// completion change them.
std::vector<uuid> make_documents(test::pg_schema& db, int n) {
  pg_intake_repository intake{db.url()};
  std::vector<uuid> docs;
  for (int i = 0; i < n; ++i) {
    intake_request r;
    r.document_id = uuid::v7();
    r.ingestion_id = uuid::v7();
    r.tenant_id = uuid::v4();
    r.content_hash = uuid::v4().str();
    r.file_path = "documents/" + r.document_id.str() + ".pdf";
    r.uploaded_by = uuid::v4();
    r.queue = "ingest-q";
    auto made = intake.create_ingestion(r, 30s);
    EXPECT_TRUE(made) << made.error().describe();
    docs.push_back(r.document_id);
  }
  db.query("UPDATE work_item SET claim_token = gen_random_uuid(), claimed_by = 'w1', "
           "lease_expires_at = now() + interval '5 minutes' WHERE status = 'in-progress'");
  db.query("UPDATE ingestion SET structured_data = '{}', valid_structured_data = true "
           "WHERE status = 'in-progress'");
  db.query("UPDATE work_item SET status = 'completed', claim_token = NULL, completed_at = now() "
           "WHERE status = 'in-progress'");
  return docs;
}

/// The stream's event ids per document, in stream order.
std::map<std::string, std::vector<std::string>> stream_by_document(test::pg_schema& db) {
  std::map<std::string, std::vector<std::string>> out;
  for (auto& row : db.query("SELECT event_id::text, ordering_key FROM event_outbox "
                            "WHERE destination = 'events' ORDER BY id"))
    out[row[1].value_or("")].push_back(row[0].value_or(""));
  return out;
}

int64_t count(test::pg_schema& db, const std::string& sql) {
  return std::stoll(db.scalar(sql));
}

relay_settings quick_relay() {
  relay_settings s;
  s.interval = 50ms;
  s.sink_retry_initial = 50ms;
  s.sink_retry_max = 200ms;
  return s;
}

class events_delivery_test : public test::postgres_test {};

} // namespace

TEST(event_signature, is_the_hmac_of_timestamp_dot_body_in_hex) {
  // RFC 4231 test case 2's key and data, framed as "<ts>.<body>".
  auto sig = event_signature("Jefe", 1700000000, R"({"a":1})");
  EXPECT_EQ(sig.rfind("sha256=", 0), 0u);
  EXPECT_EQ(sig.size(), 7u + 64u);
  EXPECT_NE(sig, event_signature("Jefe", 1700000001, R"({"a":1})"));
  auto py = test::run_python(
      "import hmac,hashlib,sys; print('sha256='+hmac.new(b'Jefe', b'1700000000.{\"a\":1}', "
      "hashlib.sha256).hexdigest(), end='')");
  ASSERT_EQ(py.exit_code, 0) << py.output;
  EXPECT_EQ(sig, py.output);
}

TEST(event_webhook_options, bad_settings_are_refused_by_name) {
  EXPECT_TRUE(validate(event_webhook_options{}));
  EXPECT_TRUE(validate({"https://hooks.example/in", "s"}));
  EXPECT_TRUE(validate({"http://127.0.0.1:9/in", "s"}));
  auto plain = validate({"http://hooks.example/in", "s"});
  ASSERT_FALSE(plain);
  EXPECT_NE(plain.error().message.find("INGESTD_EVENTS_WEBHOOK_URL must use https"),
            std::string::npos);
  auto no_secret = validate({"https://hooks.example/in", ""});
  ASSERT_FALSE(no_secret);
  EXPECT_NE(no_secret.error().message.find("INGESTD_EVENTS_WEBHOOK_SECRET"), std::string::npos);
  EXPECT_FALSE(validate({"not a url", "s"}));
}

TEST_F(events_delivery_test,
       a_receiver_down_for_a_while_then_gets_every_event_once_in_order_per_document) {
  test::chat_stub stub;
  curl_engine engine;
  const std::string secret = "s3cr3t-for-the-test";
  auto hook = stub.base_url() + "/events/t1?secret=" + secret;
  auto outbox = std::make_shared<pg_outbox_repository>(db->url());
  ASSERT_TRUE(test::await<void>([&](auto cb) { outbox->register_sinks({{"webhook"}}, cb); }));
  ASSERT_TRUE(post_sync(engine, stub.base_url() + "/events_down/t1?down=1"));
  auto docs = make_documents(*db, 8);

  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  // The sink's default timeout (10 s): a shorter one on a loaded machine would deliver an event a
  // second time, which the test counts.
  auto sink = std::make_shared<event_webhook_sink>(engine, event_webhook_options{hook, secret});
  auto relay = spawn_relay(sys, outbox, {}, quick_relay(), {{"events:webhook", sink}});

  // Down: every delivery refused, tried again after a back-off; the events wait in the outbox,
  // and state changes (here a new document) go on meanwhile.
  ASSERT_TRUE(wait_for(
      [&] {
        return count(*db, "SELECT COALESCE(max(attempts), 0) FROM event_outbox WHERE destination = "
                          "'events:webhook'")
               >= 3;
      },
      30s));
  docs.push_back(make_documents(*db, 1).front());
  EXPECT_EQ(count(*db, "SELECT count(*) FROM event_outbox WHERE destination = 'events:webhook' AND "
                       "sent_at IS NOT NULL"),
            0);

  // Up: everything arrives within seconds.
  ASSERT_TRUE(post_sync(engine, stub.base_url() + "/events_down/t1?down=0"));
  auto up = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_for(
      [&] {
        return count(*db, "SELECT count(*) FROM event_outbox WHERE destination = 'events:webhook' "
                          "AND sent_at IS NULL")
               == 0;
      },
      30s));
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - up).count();
  EXPECT_LT(seconds, 10.0);
  caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);

  auto got = test::get_sync(engine, stub.base_url() + "/events/t1");
  ASSERT_TRUE(got && got->status == 200);
  rapidjson::Document d;
  d.Parse(got->body.c_str());
  ASSERT_TRUE(d.IsObject() && d["deliveries"].IsArray()) << got->body;
  std::map<std::string, std::vector<std::string>> received;
  std::set<std::string> ids;
  for (auto& e : d["deliveries"].GetArray()) {
    std::string id = e["id"].GetString();
    EXPECT_TRUE(e["signature_ok"].GetBool()) << id;
    EXPECT_EQ(std::string{e["header_id"].GetString()}, id);
    EXPECT_TRUE(ids.insert(id).second) << "delivered twice: " << id;
    received[e["document_id"].IsString() ? e["document_id"].GetString() : ""].push_back(id);
  }
  auto expected = stream_by_document(*db);
  EXPECT_EQ(ids.size(),
            static_cast<size_t>(
                count(*db, "SELECT count(*) FROM event_outbox WHERE destination = 'events'")));
  EXPECT_EQ(expected.size(), docs.size());
  for (auto& [document, events] : expected) {
    EXPECT_EQ(events.size(), 5u) << document;
    EXPECT_EQ(received[document], events) << "the order of document " << document;
  }
}

TEST_F(events_delivery_test, a_wrong_secret_is_refused_by_the_receiver_and_retried) {
  test::chat_stub stub;
  curl_engine engine;
  auto outbox = std::make_shared<pg_outbox_repository>(db->url());
  ASSERT_TRUE(test::await<void>([&](auto cb) { outbox->register_sinks({{"webhook"}}, cb); }));
  make_documents(*db, 1);
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto sink = std::make_shared<event_webhook_sink>(
      engine, event_webhook_options{stub.base_url() + "/events/t2?secret=right", "wrong"});
  auto relay = spawn_relay(sys, outbox, {}, quick_relay(), {{"events:webhook", sink}});
  ASSERT_TRUE(wait_for(
      [&] {
        return count(*db, "SELECT COALESCE(max(attempts), 0) FROM event_outbox WHERE destination = "
                          "'events:webhook'")
               >= 2;
      },
      30s));
  caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
  EXPECT_EQ(count(*db, "SELECT count(*) FROM event_outbox WHERE destination = 'events:webhook' AND "
                       "sent_at IS NOT NULL"),
            0);
  EXPECT_NE(db->scalar("SELECT last_error FROM event_outbox WHERE destination = 'events:webhook' "
                       "AND last_error IS NOT NULL LIMIT 1")
                .find("HTTP 401"),
            std::string::npos);
  // The first event of the document was tried; the later ones waited behind it.
  auto got = test::get_sync(engine, stub.base_url() + "/events/t2");
  ASSERT_TRUE(got);
  rapidjson::Document d;
  d.Parse(got->body.c_str());
  std::set<std::string> tried;
  for (auto& e : d["deliveries"].GetArray()) {
    EXPECT_FALSE(e["signature_ok"].GetBool());
    tried.insert(e["id"].GetString());
  }
  EXPECT_EQ(tried.size(), 1u);
}

TEST_F(events_delivery_test, the_failure_notifier_posts_each_failure_and_nothing_else) {
  test::chat_stub stub;
  curl_engine engine;
  auto outbox = std::make_shared<pg_outbox_repository>(db->url());
  ASSERT_TRUE(test::await<void>([&](auto cb) {
    outbox->register_sinks({{"notify", failure_event_types()}}, cb);
  }));
  // Two documents that complete, one whose ingestion fails, one whose matching fails.
  auto done = make_documents(*db, 2);
  pg_intake_repository intake{db->url()};
  intake_request r;
  r.document_id = uuid::v7();
  r.ingestion_id = uuid::v7();
  r.tenant_id = uuid::v4();
  r.content_hash = uuid::v4().str();
  r.file_path = "documents/" + r.document_id.str() + ".pdf";
  r.uploaded_by = uuid::v4();
  r.queue = "ingest-q";
  ASSERT_TRUE(intake.create_ingestion(r, 30s));
  db->query("UPDATE work_item SET status = 'failed', error_class = 'permanent', attempt_count = 1, "
            "last_error = 'ocr.corrupt_file: not a PDF', completed_at = now() WHERE id = $1",
            {r.ingestion_id.str()});
  auto unmatched = done.front();
  db->query("INSERT INTO work_item (id, stage, document_id, tenant_id) SELECT id, 'match', id, "
            "tenant_id FROM document WHERE id = $1",
            {unmatched.str()});
  db->query(
      "UPDATE work_item SET status = 'failed', attempt_count = 3, last_error = 'llm.http_503: "
      "busy', completed_at = now() WHERE id = $1",
      {unmatched.str()});
  EXPECT_EQ(count(*db, "SELECT count(*) FROM event_outbox WHERE destination = 'events:notify'"), 2);

  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  webhook_options wo;
  wo.url = stub.base_url() + "/webhook/n1";
  wo.link_template = "https://admin.example/documents/{document_id}";
  auto notifier = std::make_shared<webhook_notifier>(engine, wo);
  auto relay = spawn_relay(sys, outbox, {}, quick_relay(), {{"events:notify", notifier}});
  ASSERT_TRUE(wait_for(
      [&] {
        return count(*db, "SELECT count(*) FROM event_outbox WHERE destination = 'events:notify' "
                          "AND sent_at IS NULL")
               == 0;
      },
      30s));
  caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
  auto got = test::get_sync(engine, stub.base_url() + "/webhook/n1");
  ASSERT_TRUE(got && got->status == 200);
  rapidjson::Document d;
  d.Parse(got->body.c_str());
  ASSERT_FALSE(d.HasParseError()) << got->body;
  EXPECT_EQ(d["count"].GetInt(), 2) << got->body;
  // One post per failure, in Slack's format with the raw values beside. The two belong to two
  // documents, whose events the relay may send in either order.
  std::map<std::string, const rapidjson::Value*> by_event;
  for (const auto& post : d["all"].GetArray()) {
    by_event[post["ingestd"]["event"].GetString()] = &post;
  }
  ASSERT_EQ(by_event.size(), 2u) << got->body;
  ASSERT_TRUE(by_event.contains("ingestion_failed")) << got->body;
  ASSERT_TRUE(by_event.contains("matching_failed")) << got->body;
  EXPECT_EQ(std::string{(*by_event["ingestion_failed"])["ingestd"]["document_id"].GetString()},
            r.document_id.str());
  const auto& last = *by_event["matching_failed"];
  EXPECT_NE(std::string{last["text"].GetString()}.find("Matching failed after 3 attempts"),
            std::string::npos)
      << got->body;
  EXPECT_EQ(std::string{last["ingestd"]["document_id"].GetString()}, unmatched.str());
  EXPECT_EQ(std::string{last["ingestd"]["link"].GetString()},
            "https://admin.example/documents/" + unmatched.str());
  EXPECT_STREQ(last["ingestd"]["error"].GetString(), "llm.http_503: busy");
}

class events_sqs_test : public test::fauxqs_test {};

TEST_F(events_sqs_test, every_event_reaches_the_sqs_queue) {
  test::pg_schema db;
  std::string url;
  std::shared_ptr<queue> q = make_queue({}, &url);
  auto outbox = std::make_shared<pg_outbox_repository>(db.url());
  ASSERT_TRUE(test::await<void>([&](auto cb) { outbox->register_sinks({{"sqs"}}, cb); }));
  make_documents(db, 3);
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto relay = spawn_relay(sys, outbox, {}, quick_relay(),
                           {{"events:sqs", std::make_shared<queue_event_sink>(q)}});
  ASSERT_TRUE(wait_for(
      [&] {
        return count(db, "SELECT count(*) FROM event_outbox WHERE destination = 'events:sqs' AND "
                         "sent_at IS NULL")
               == 0;
      },
      30s));
  caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
  std::set<std::string> expected;
  for (auto& row : db.query("SELECT event_id::text FROM event_outbox WHERE destination = 'events'"))
    expected.insert(row[0].value_or(""));
  // Each message carries the event's type, tenant and document as message attributes (boto3
  // checks their digest).
  auto got = test::run_python(boto3_preamble() + R"(
import json
seen = 0
for _ in range(40):
    r = sqs.receive_message(QueueUrl=sys.argv[1], WaitTimeSeconds=1, MaxNumberOfMessages=10,
                            VisibilityTimeout=600, MessageAttributeNames=['All'])
    for m in r.get('Messages', []):
        body = json.loads(m['Body'])
        attributes = {k: v['StringValue'] for k, v in m.get('MessageAttributes', {}).items()}
        wanted = {k: body[k] for k in ('type', 'tenant_id', 'document_id') if body.get(k)}
        assert attributes == wanted, (attributes, body)
        print(body['id'])
        seen += 1
    if seen >= int(sys.argv[2]):
        break
)",
                              {url, std::to_string(expected.size())});
  ASSERT_EQ(got.exit_code, 0) << got.output;
  std::set<std::string> received;
  std::istringstream lines{got.output};
  for (std::string id; std::getline(lines, id);)
    EXPECT_TRUE(received.insert(id).second) << "twice: " << id;
  EXPECT_EQ(expected.size(), 15u);
  EXPECT_EQ(received, expected);
}
