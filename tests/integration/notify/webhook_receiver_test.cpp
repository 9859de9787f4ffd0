// webhook_notifier over the real curl engine: a notice reaches a local receiver; as an event sink
// it posts the notice of a failure event and nothing for any other event; a dead receiver yields a
// transient error in the callback and nothing else.
#include <future>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/http/curl_engine.hpp"
#include "adapters/notify/webhook_notifier.hpp"
#include "tests/support/llm/chat_stub.hpp"
#include "tests/support/llm/stub_client.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

failure_notice notice() {
  return failure_notice{"0190a1b2-0000-7000-8000-000000000001",
                        "0190a1b2-0000-7000-8000-0000000000d0",
                        "tenant-7",
                        "llm.context_exceeded: HTTP 400",
                        "permanent",
                        1};
}

result<void> notify(webhook_notifier& n) {
  auto p = std::make_shared<std::promise<result<void>>>();
  auto f = p->get_future();
  n.notify_failed(notice(), [p](result<void> r) { p->set_value(std::move(r)); });
  if (f.wait_for(30s) != std::future_status::ready)
    return error::make_transient("test.timeout", "no callback");
  return f.get();
}

} // namespace

TEST(webhook_receiver, a_notice_is_delivered) {
  test::chat_stub stub;
  curl_engine engine;
  webhook_notifier n{
      engine, {stub.base_url() + "/webhook/a", "https://admin.example/documents/{document_id}"}};
  auto r = notify(n);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  auto got = test::get_sync(engine, stub.base_url() + "/webhook/a");
  ASSERT_TRUE(got.ok());
  rapidjson::Document d;
  d.Parse(got->body.c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_EQ(d["count"].GetInt(), 1);
  const auto& last = d["last"];
  EXPECT_NE(std::string{last["text"].GetString()}.find("tenant-7"), std::string::npos);
  EXPECT_STREQ(last["ingestd"]["link"].GetString(),
               "https://admin.example/documents/0190a1b2-0000-7000-8000-0000000000d0");
  EXPECT_EQ(last["ingestd"]["attempts"].GetInt(), 1);
}

TEST(webhook_receiver, as_an_event_sink_it_posts_failure_events_only) {
  test::chat_stub stub;
  curl_engine engine;
  webhook_notifier n{engine,
                     {stub.base_url() + "/webhook/s", "https://admin.example/i/{ingestion_id}"}};
  auto deliver = [&](std::string body) {
    auto p = std::make_shared<std::promise<result<void>>>();
    auto f = p->get_future();
    n.deliver(sink_event{"e1", std::move(body)},
              [p](result<void> r) { p->set_value(std::move(r)); });
    if (f.wait_for(30s) != std::future_status::ready)
      return result<void>{error::make_transient("test.timeout", "no callback")};
    return f.get();
  };
  const std::string event_head = R"({"id":"e1","time":"2026-01-01T00:00:00.000000Z",)"
                                 R"("tenant_id":"t-1","document_id":"d-1","ingestion_id":"i-1",)";
  EXPECT_TRUE(deliver(event_head + R"("type":"INGESTION_COMPLETED","payload":{}})"));
  EXPECT_TRUE(deliver("not json"));
  EXPECT_EQ(test::get_count(engine, stub.base_url() + "/webhook/s"), 0);
  ASSERT_TRUE(deliver(event_head + R"("type":"INGESTION_FAILED","payload":{"error_class":"poison",)"
                      + R"("error":"poison: the claim expired","attempts":3}})"));
  auto got = test::get_sync(engine, stub.base_url() + "/webhook/s");
  ASSERT_TRUE(got.ok());
  rapidjson::Document d;
  d.Parse(got->body.c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_EQ(d["count"].GetInt(), 1);
  const auto& last = d["last"];
  EXPECT_STREQ(last["ingestd"]["event"].GetString(), "ingestion_failed");
  EXPECT_STREQ(last["ingestd"]["error_class"].GetString(), "poison");
  EXPECT_EQ(last["ingestd"]["attempts"].GetInt(), 3);
  EXPECT_STREQ(last["ingestd"]["link"].GetString(), "https://admin.example/i/i-1");
  EXPECT_NE(std::string{last["text"].GetString()}.find("Ingestion failed after 3 attempts"),
            std::string::npos);
}

TEST(webhook_receiver, a_dead_receiver_is_reported_not_thrown) {
  curl_engine engine;
  webhook_options o;
  o.url = "http://127.0.0.1:" + std::to_string(test::unused_port()) + "/hook";
  o.timeout = 2s;
  webhook_notifier n{engine, o};
  result<void> r;
  EXPECT_NO_THROW(r = notify(n));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().transient()) << r.error().describe();
  // The engine is still usable for everything else.
  test::chat_stub stub;
  EXPECT_EQ(test::get_count(engine, stub.base_url() + "/count?model=none"), 0);
}
