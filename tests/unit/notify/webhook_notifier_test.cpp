// webhook_notifier: the Slack-compatible payload, the link template, and failures reported to the
// callback (classified), never thrown; an empty URL disables it; the URL's secret part (path,
// query, user) never reaches a log line or a reported error, and the lines follow log.format; as
// an event sink, a post per INGESTION_FAILED or MATCHING_FAILED event and none for the others.
#include <optional>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/notify/event_webhook_sink.hpp"
#include "adapters/notify/webhook_notifier.hpp"
#include "adapters/support/log.hpp"
#include "tests/support/await.hpp"
#include "tests/support/http/fake_http_client.hpp"

using namespace ingestd;
using test::await;
using test::fake_http_client;

namespace {

failure_notice notice() {
  return failure_notice{"0190a1b2-0000-7000-8000-000000000001",
                        "0190a1b2-0000-7000-8000-0000000000d0",
                        "tenant-42",
                        "extraction.gate_failed: totals do not reconcile",
                        "transient",
                        3};
}

http_response status(long s) {
  return test::make_response(s, "ok");
}

} // namespace

TEST(webhook_notifier, posts_slack_compatible_json) {
  fake_http_client http{[](const http_request&) { return status(200); }};
  webhook_notifier n{http,
                     {"https://hooks.slack.test/services/T0/B0/secret",
                      "https://admin.example/t/{tenant_id}/documents/{document_id}"}};
  auto r = await<void>([&](auto cb) { n.notify_failed(notice(), std::move(cb)); });
  EXPECT_TRUE(r.ok());
  auto requests = http.requests();
  ASSERT_EQ(requests.size(), 1u);
  const auto& req = requests[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, "https://hooks.slack.test/services/T0/B0/secret");
  rapidjson::Document d;
  d.Parse(req.body.c_str());
  ASSERT_FALSE(d.HasParseError());
  std::string text = d["text"].GetString();
  EXPECT_NE(text.find("0190a1b2-0000-7000-8000-0000000000d0"), std::string::npos);
  EXPECT_NE(text.find("tenant-42"), std::string::npos);
  EXPECT_NE(text.find("3 attempts"), std::string::npos);
  EXPECT_NE(text.find("totals do not reconcile"), std::string::npos);
  EXPECT_TRUE(d["attachments"][0]["fields"].IsArray());
  const auto& raw = d["ingestd"];
  EXPECT_STREQ(raw["document_id"].GetString(), "0190a1b2-0000-7000-8000-0000000000d0");
  EXPECT_STREQ(raw["tenant_id"].GetString(), "tenant-42");
  EXPECT_EQ(raw["attempts"].GetInt(), 3);
  EXPECT_STREQ(raw["error_class"].GetString(), "transient");
  EXPECT_STREQ(raw["link"].GetString(),
               "https://admin.example/t/tenant-42/documents/0190a1b2-0000-7000-8000-0000000000d0");
}

TEST(webhook_notifier, failures_are_reported_not_thrown) {
  fake_http_client http;
  webhook_notifier n{http, {"https://hooks.slack.test/x"}};
  auto outcome = [&](fake_http_client::responder f) {
    http.set_responder(std::move(f));
    std::optional<ingestd::error> err;
    auto r = await<void>([&](auto cb) { n.notify_failed(notice(), std::move(cb)); });
    if (!r)
      err = r.error();
    return err;
  };
  auto e500 = outcome([](const http_request&) { return status(500); });
  ASSERT_TRUE(e500);
  EXPECT_EQ(e500->code, "notify.http_500");
  EXPECT_TRUE(e500->transient());
  auto e404 = outcome([](const http_request&) { return status(404); });
  ASSERT_TRUE(e404);
  EXPECT_TRUE(e404->permanent());
  auto dead = outcome([](const http_request&) -> result<http_response> {
    return error::make_transient("http.connect", "connection refused");
  });
  ASSERT_TRUE(dead);
  EXPECT_EQ(dead->code, "http.connect");
  EXPECT_TRUE(dead->transient());
}

TEST(webhook_notifier, an_empty_url_disables_it) {
  fake_http_client http;
  webhook_notifier n{http, {}};
  int calls = 0; // answered at once, without a request
  n.notify_failed(notice(), [&](const result<void>& r) {
    ++calls;
    EXPECT_TRUE(r.ok());
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(http.request_count(), 0u);
}

TEST(webhook_notifier, loggable_keeps_only_the_scheme_and_host) {
  EXPECT_EQ(webhook_notifier::loggable("https://hooks.slack.test/services/T0/B0/secret"),
            "https://hooks.slack.test");
  EXPECT_EQ(webhook_notifier::loggable("https://user:pw@hooks.test:8443?token=secret#frag"),
            "https://hooks.test");
  EXPECT_EQ(webhook_notifier::loggable("http://[::1]:9000/hook/secret"), "http://[::1]");
  EXPECT_EQ(webhook_notifier::loggable("hooks.test/secret"), "hooks.test");
}

TEST(webhook_notifier, failure_lines_are_json_and_carry_no_secret_part_of_the_url) {
  const std::string url = "https://hooks.slack.test/services/T0/B0/s3cr3t?token=q5ecret";
  log::setup("json", "info");
  log::capture captured;
  fake_http_client http;
  webhook_options opts{url};
  opts.worker_id = "node-7";
  webhook_notifier n{http, opts};
  std::vector<ingestd::error> reported;
  auto outcome = [&](fake_http_client::responder f) {
    http.set_responder(std::move(f));
    auto r = await<void>([&](auto cb) { n.notify_failed(notice(), std::move(cb)); });
    ASSERT_FALSE(r.ok());
    reported.push_back(r.error());
  };
  // The transport quotes the request as the curl engine does ("POST <url>: <detail>"); a server
  // may echo the path alone.
  outcome([&](const http_request& req) -> result<http_response> {
    return error::make_transient("http.connect",
                                 req.method + " " + req.url + ": Connection refused");
  });
  outcome([](const http_request&) -> result<http_response> {
    return error::make_transient("http.transport",
                                 "no route for /services/T0/B0/s3cr3t?token=q5ecret");
  });
  outcome([](const http_request&) { return status(500); });
  auto lines = captured.lines();
  log::setup("text", "info");
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& line : lines) {
    rapidjson::Document d;
    d.Parse(line.c_str());
    ASSERT_FALSE(d.HasParseError()) << line;
    ASSERT_TRUE(d.IsObject()) << line;
    EXPECT_STREQ(d["level"].GetString(), "warn") << line;
    EXPECT_STREQ(d["webhook"].GetString(), "https://hooks.slack.test") << line;
    EXPECT_STREQ(d["document_id"].GetString(), "0190a1b2-0000-7000-8000-0000000000d0") << line;
    // The job's fields, as every line about a job carries them.
    EXPECT_STREQ(d["worker_id"].GetString(), "node-7") << line;
    EXPECT_STREQ(d["stage"].GetString(), "ingest") << line;
    EXPECT_STREQ(d["step"].GetString(), "notify") << line;
    EXPECT_STREQ(d["ingestion_id"].GetString(), "0190a1b2-0000-7000-8000-000000000001") << line;
    EXPECT_STREQ(d["tenant_id"].GetString(), "tenant-42") << line;
    for (const char* secret : {"/services", "s3cr3t", "token=", "q5ecret"})
      EXPECT_EQ(line.find(secret), std::string::npos) << secret << " in " << line;
  }
  EXPECT_NE(lines[0].find("Connection refused"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("notify.http_500"), std::string::npos) << lines[2];
  for (const auto& e : reported)
    for (const char* secret : {"/services", "s3cr3t", "q5ecret"})
      EXPECT_EQ(e.describe().find(secret), std::string::npos) << secret << " in " << e.describe();
}

// ---- the notifier as an event sink ------------------------------------------------------------

namespace {

/// An event of the stream as ingestd_emit_event writes it.
std::string event_json(const std::string& type, const std::string& ingestion_id,
                       const std::string& payload) {
  return R"({"id":"0190a1b2-0000-7000-8000-0000000000e1","type":")" + type
         + R"(","time":"2026-01-15T10:00:00Z","tenant_id":"tenant-42",)"
           R"("document_id":"0190a1b2-0000-7000-8000-0000000000d0","ingestion_id":)"
         + (ingestion_id.empty() ? std::string{"null"} : "\"" + ingestion_id + "\"")
         + R"(,"payload":)" + payload + "}";
}

const std::string failed_payload
    = R"({"error_class":"poison","error":"poison: the claim expired","attempts":3})";

} // namespace

TEST(webhook_notifier, notice_of_an_ingestion_failure_event) {
  auto n = notice_of_event(
      event_json("INGESTION_FAILED", "0190a1b2-0000-7000-8000-000000000001", failed_payload));
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->stage, "ingest");
  EXPECT_EQ(n->ingestion_id, "0190a1b2-0000-7000-8000-000000000001");
  EXPECT_EQ(n->document_id, "0190a1b2-0000-7000-8000-0000000000d0");
  EXPECT_EQ(n->tenant_id, "tenant-42");
  EXPECT_EQ(n->error, "poison: the claim expired");
  EXPECT_EQ(n->error_class, "poison");
  EXPECT_EQ(n->attempts, 3);
}

TEST(webhook_notifier, notice_of_a_matching_failure_event) {
  auto n = notice_of_event(
      event_json("MATCHING_FAILED", "", R"({"error":"llm.server_error: HTTP 503","attempts":3})"));
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->stage, "match");
  EXPECT_EQ(n->ingestion_id, "");
  EXPECT_EQ(n->document_id, "0190a1b2-0000-7000-8000-0000000000d0");
  EXPECT_EQ(n->error, "llm.server_error: HTTP 503");
  EXPECT_EQ(n->attempts, 3);
}

TEST(webhook_notifier, other_events_and_other_text_are_no_notice) {
  EXPECT_FALSE(notice_of_event(event_json("INGESTION_COMPLETED", "x", "{}")).has_value());
  EXPECT_FALSE(notice_of_event(event_json("WARNING", "x", failed_payload)).has_value());
  EXPECT_FALSE(notice_of_event("not json").has_value());
  EXPECT_FALSE(notice_of_event("[]").has_value());
  EXPECT_FALSE(notice_of_event("").has_value());
}

TEST(webhook_notifier, takes_the_two_failure_event_types) {
  EXPECT_EQ(failure_event_types(),
            (std::vector<std::string>{"INGESTION_FAILED", "MATCHING_FAILED"}));
}

TEST(webhook_notifier, delivers_a_failure_event_as_one_post) {
  fake_http_client http{[](const http_request&) { return status(200); }};
  webhook_notifier n{http, {"https://hooks.slack.test/services/T0/B0/secret"}};
  auto body
      = event_json("INGESTION_FAILED", "0190a1b2-0000-7000-8000-000000000001", failed_payload);
  auto r = await<void>([&](auto cb) { n.deliver(sink_event{"e1", body}, std::move(cb)); });
  EXPECT_TRUE(r.ok());
  auto requests = http.requests();
  ASSERT_EQ(requests.size(), 1u);
  rapidjson::Document d;
  d.Parse(requests[0].body.c_str());
  ASSERT_FALSE(d.HasParseError());
  std::string text = d["text"].GetString();
  EXPECT_EQ(text.rfind("Ingestion failed after 3 attempts", 0), 0u) << text;
  EXPECT_STREQ(d["ingestd"]["event"].GetString(), "ingestion_failed");
  EXPECT_STREQ(d["ingestd"]["ingestion_id"].GetString(), "0190a1b2-0000-7000-8000-000000000001");
  EXPECT_STREQ(d["ingestd"]["error_class"].GetString(), "poison");
}

TEST(webhook_notifier, delivers_a_matching_failure_without_an_ingestion) {
  fake_http_client http{[](const http_request&) { return status(200); }};
  webhook_notifier n{http, {"https://hooks.slack.test/x"}};
  auto body = event_json("MATCHING_FAILED", "", R"({"error":"llm.unauthorized","attempts":1})");
  auto r = await<void>([&](auto cb) { n.deliver(sink_event{"e2", body}, std::move(cb)); });
  EXPECT_TRUE(r.ok());
  auto requests = http.requests();
  ASSERT_EQ(requests.size(), 1u);
  rapidjson::Document d;
  d.Parse(requests[0].body.c_str());
  ASSERT_FALSE(d.HasParseError());
  std::string text = d["text"].GetString();
  EXPECT_EQ(text.rfind("Matching failed after 1 attempt:", 0), 0u) << text;
  EXPECT_STREQ(d["ingestd"]["event"].GetString(), "matching_failed");
  for (auto& f : d["attachments"][0]["fields"].GetArray())
    EXPECT_STRNE(f["title"].GetString(), "Ingestion");
}

TEST(webhook_notifier, other_events_are_delivered_without_a_post) {
  fake_http_client http{[](const http_request&) { return status(500); }};
  webhook_notifier n{http, {"https://hooks.slack.test/x"}};
  for (auto* type : {"INGESTION_STARTED", "INGESTION_COMPLETED", "DOCUMENT_PROCESSED", "WARNING"}) {
    int calls = 0; // answered at once (any thread may answer an event sink's call)
    n.deliver(sink_event{"e3", event_json(type, "x", failed_payload)}, [&](const result<void>& r) {
      ++calls;
      EXPECT_TRUE(r.ok()) << type;
    });
    EXPECT_EQ(calls, 1) << type;
  }
  EXPECT_EQ(http.request_count(), 0u);
}

TEST(webhook_notifier, a_failed_post_is_not_delivered) {
  // The relay gives the event back and tries again later: at least once.
  fake_http_client http{[](const http_request&) { return status(503); }};
  webhook_notifier n{http, {"https://hooks.slack.test/x"}};
  auto body = event_json("INGESTION_FAILED", "i", failed_payload);
  auto r = await<void>([&](auto cb) { n.deliver(sink_event{"e4", body}, std::move(cb)); });
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().transient());
  EXPECT_EQ(r.error().code, "notify.http_503");
}

TEST(event_webhook_sink, plain_http_only_to_a_host_that_is_exactly_loopback) {
  auto check = [](const std::string& url) {
    return validate(ingestd::event_webhook_options{url, "a-secret-of-the-test", {}}).ok();
  };
  EXPECT_TRUE(check("http://127.0.0.1:8080/hook"));
  EXPECT_TRUE(check("http://localhost/hook"));
  EXPECT_TRUE(check("http://[::1]:9000/hook"));
  EXPECT_TRUE(check("https://hooks.example.com/hook"));
  // Names that only start like a loopback address resolve wherever their owner wants.
  EXPECT_FALSE(check("http://127.attacker.example/hook"));
  EXPECT_FALSE(check("http://127.0.0.1.attacker.example/hook"));
  EXPECT_FALSE(check("http://localhost.attacker.example/hook"));
}
