// Unit tests of the SQS client with a scripted http_client: the requests it builds (headers,
// signature scope, JSON bodies, batching) and how it reads every awkward answer SQS gives.
#include <future>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/aws/encoding.hpp"
#include "adapters/queue/sqs_protocol.hpp"
#include "adapters/queue/sqs_queue.hpp"
#include "tests/support/await.hpp"
#include "tests/support/http/fake_http_client.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::fake_http_client;
using ingestd::test::header_of;
using ingestd::test::make_response;

namespace {

constexpr const char* queue_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs";

sqs_connection test_connection() {
  sqs_connection c;
  c.credentials.access_key_id = "AKIDEXAMPLE";
  c.credentials.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  c.credentials.region = "eu-west-1";
  return c;
}

std::unique_ptr<sqs_queue> make_queue(std::shared_ptr<fake_http_client> http,
                                      sqs_connection c = test_connection()) {
  sqs_queue_options o;
  o.connection = std::move(c);
  o.queue_url = queue_url;
  return std::make_unique<sqs_queue>(std::move(http), std::move(o));
}

rapidjson::Document json(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.data(), text.size());
  EXPECT_FALSE(d.HasParseError()) << text;
  return d;
}

std::string op_of(const http_request& r) {
  return header_of(r, "X-Amz-Target");
}

http_response sqs_error(long status, const std::string& type, const std::string& message,
                        const std::string& query_header = {}) {
  http_headers h{{"Content-Type", "application/x-amz-json-1.0"}};
  if (!query_header.empty())
    h.emplace_back("x-amzn-query-error", query_header);
  return make_response(status, "{\"__type\":\"" + type + "\",\"message\":\"" + message + "\"}", h);
}

/// Answers a batch call: every entry succeeds except those whose Id is in `fail` (code, fault).
std::string batch_answer(const http_request& req,
                         const std::map<std::string, std::pair<std::string, bool>>& fail = {},
                         bool with_message_ids = false) {
  auto doc = json(req.body);
  std::string ok = "[";
  std::string bad = "[";
  for (auto& e : doc["Entries"].GetArray()) {
    std::string id = e["Id"].GetString();
    if (auto it = fail.find(id); it != fail.end()) {
      if (bad.size() > 1)
        bad += ",";
      bad += "{\"Id\":\"" + id + "\",\"SenderFault\":" + (it->second.second ? "true" : "false")
             + ",\"Code\":\"" + it->second.first + "\",\"Message\":\"entry failed\"}";
    } else {
      if (ok.size() > 1)
        ok += ",";
      ok += "{\"Id\":\"" + id + "\"";
      if (with_message_ids)
        ok += ",\"MessageId\":\"mid-" + id + "\",\"MD5OfMessageBody\":\"x\"";
      ok += "}";
    }
  }
  return "{\"Successful\":" + ok + "],\"Failed\":" + bad + "]}";
}

} // namespace

// ---- request building -----------------------------------------------------------------------

TEST(sqs_request, receive_is_a_signed_json_post_with_the_long_poll_parameters) {
  auto http = std::make_shared<fake_http_client>(
      [](const http_request&) -> result<http_response> { return make_response(200, "{}"); });
  auto q = make_queue(http);
  auto r = await<std::vector<queue_message>>(
      [&](auto cb) { q->receive(10, 20s, 45s, std::move(cb)); });
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_TRUE(r->empty());
  auto reqs = http->requests();
  ASSERT_EQ(reqs.size(), 1u);
  auto& req = reqs[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, "https://sqs.eu-west-1.amazonaws.com/");
  EXPECT_EQ(header_of(req, "Content-Type"), "application/x-amz-json-1.0");
  EXPECT_EQ(op_of(req), "AmazonSQS.ReceiveMessage");
  auto auth = header_of(req, "Authorization");
  EXPECT_EQ(auth.rfind("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/", 0), 0u) << auth;
  EXPECT_NE(auth.find("/eu-west-1/sqs/aws4_request"), std::string::npos) << auth;
  EXPECT_NE(auth.find("x-amz-target"), std::string::npos) << "the target header is signed";
  EXPECT_FALSE(header_of(req, "X-Amz-Date").empty());
  // The HTTP timeout outlasts the long poll.
  EXPECT_GT(req.total_timeout, std::chrono::milliseconds{20s});
  auto body = json(req.body);
  EXPECT_STREQ(body["QueueUrl"].GetString(), queue_url);
  EXPECT_EQ(body["MaxNumberOfMessages"].GetInt(), 10);
  EXPECT_EQ(body["WaitTimeSeconds"].GetInt(), 20);
  EXPECT_EQ(body["VisibilityTimeout"].GetInt(), 45);
  std::set<std::string> names;
  for (auto& n : body["MessageSystemAttributeNames"].GetArray())
    names.insert(n.GetString());
  EXPECT_EQ(names, (std::set<std::string>{"ApproximateReceiveCount", "SentTimestamp"}));
}

TEST(sqs_request, endpoint_override_and_session_token) {
  auto http = std::make_shared<fake_http_client>(
      [](const http_request&) -> result<http_response> { return make_response(200, "{}"); });
  auto c = test_connection();
  c.endpoint = "http://127.0.0.1:54566/";
  c.credentials.session_token = "SESSION";
  c.region = "us-east-1";
  auto q = make_queue(http, c);
  auto r
      = await<std::vector<queue_message>>([&](auto cb) { q->receive(1, 0s, 30s, std::move(cb)); });
  ASSERT_TRUE(r);
  auto req = http->requests().at(0);
  EXPECT_EQ(req.url, "http://127.0.0.1:54566/");
  EXPECT_EQ(header_of(req, "X-Amz-Security-Token"), "SESSION");
  EXPECT_NE(header_of(req, "Authorization").find("/us-east-1/sqs/aws4_request"), std::string::npos);
}

TEST(sqs_request, receive_arguments_out_of_range_fail_without_a_request) {
  auto http = std::make_shared<fake_http_client>();
  auto q = make_queue(http);
  for (auto args : {std::tuple{0, 0, 30}, std::tuple{11, 0, 30}, std::tuple{1, 21, 30},
                    std::tuple{1, -1, 30}, std::tuple{1, 0, 43'201}}) {
    auto r = await<std::vector<queue_message>>([&](auto cb) {
      auto [n, wait, vis] = args; // (clang 14 cannot capture structured bindings in a lambda)
      q->receive(n, std::chrono::seconds{wait}, std::chrono::seconds{vis}, std::move(cb));
    });
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().permanent());
    EXPECT_EQ(r.error().code, "sqs.bad_argument");
  }
  EXPECT_EQ(http->request_count(), 0u);
}

TEST(sqs_request, queue_name_is_resolved_once_with_get_queue_url) {
  auto http
      = std::make_shared<fake_http_client>([](const http_request& req) -> result<http_response> {
          if (op_of(req) == "AmazonSQS.GetQueueUrl") {
            EXPECT_STREQ(json(req.body)["QueueName"].GetString(), "jobs");
            return make_response(200, std::string{"{\"QueueUrl\":\""} + queue_url + "\"}");
          }
          EXPECT_STREQ(json(req.body)["QueueUrl"].GetString(), queue_url);
          return make_response(200, "{}");
        });
  sqs_queue_options o;
  o.connection = test_connection();
  o.queue_name = "jobs";
  sqs_queue q{http, o};
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(
        await<std::vector<queue_message>>([&](auto cb) { q.receive(1, 0s, 30s, std::move(cb)); }));
  auto reqs = http->requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(op_of(reqs[0]), "AmazonSQS.GetQueueUrl");
  for (size_t i = 1; i < reqs.size(); ++i)
    EXPECT_EQ(op_of(reqs[i]), "AmazonSQS.ReceiveMessage");
}

TEST(sqs_request, missing_queue_name_reports_the_lookup_error) {
  auto http = std::make_shared<fake_http_client>([](const http_request&) -> result<http_response> {
    return sqs_error(400, "com.amazonaws.sqs#QueueDoesNotExist",
                     "The specified queue does not exist.",
                     "AWS.SimpleQueueService.NonExistentQueue;Sender");
  });
  sqs_queue_options o;
  o.connection = test_connection();
  o.queue_name = "missing";
  sqs_queue q{http, o};
  auto r = await<std::vector<batch_entry_result>>([&](auto cb) {
    q.remove({"r1", "r2"}, std::move(cb));
  });
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 2u);
  for (auto& e : *r) {
    EXPECT_TRUE(e.failed);
    EXPECT_TRUE(e.error.permanent());
    EXPECT_EQ(e.error.code, "sqs.NonExistentQueue");
  }
}

// ---- receive answers ------------------------------------------------------------------------

TEST(sqs_receive, messages_with_string_attributes) {
  std::string body1 = "{\"ingestion_id\":\"0190\"}";
  std::string body2 = "second \xC3\xA9";
  auto answer = std::string{"{\"Messages\":["}
                + "{\"MessageId\":\"m1\",\"ReceiptHandle\":\"rh1\",\"MD5OfBody\":\""
                + aws::md5_hex(body1) + "\",\"Body\":\"{\\\"ingestion_id\\\":\\\"0190\\\"}\","
                + "\"Attributes\":{\"ApproximateReceiveCount\":\"3\",\"SentTimestamp\":"
                  "\"1700000000123\"}},"
                + "{\"MessageId\":\"m2\",\"ReceiptHandle\":\"rh2\",\"MD5OfBody\":\""
                + aws::md5_hex(body2) + "\",\"Body\":\"second \xC3\xA9\"}]}";
  auto http = std::make_shared<fake_http_client>(
      [&](const http_request&) -> result<http_response> { return make_response(200, answer); });
  auto q = make_queue(http);
  auto r
      = await<std::vector<queue_message>>([&](auto cb) { q->receive(10, 1s, 30s, std::move(cb)); });
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].id, "m1");
  EXPECT_EQ((*r)[0].receipt, "rh1");
  EXPECT_EQ((*r)[0].body, body1);
  EXPECT_EQ((*r)[0].receive_count, 3);
  EXPECT_EQ((*r)[0].sent_at_ms, 1700000000123);
  EXPECT_EQ((*r)[1].body, body2);
  EXPECT_EQ((*r)[1].receive_count, 0) << "no attributes: unknown";
}

TEST(sqs_receive, absent_null_or_empty_messages_mean_none) {
  for (auto body : {"{}", "{\"Messages\":null}", "{\"Messages\":[]}"}) {
    auto r = sqs::parse_receive(body);
    ASSERT_TRUE(r) << body;
    EXPECT_TRUE(r->empty()) << body;
  }
}

TEST(sqs_receive, receive_counts_beyond_int32_do_not_wrap) {
  // 2^32 + 1 used to wrap to 1, a first delivery, hiding a message that was received forever.
  auto r = sqs::parse_receive("{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
                              "\"Attributes\":{\"ApproximateReceiveCount\":\"4294967297\"}},"
                              "{\"MessageId\":\"n\",\"ReceiptHandle\":\"s\","
                              "\"Attributes\":{\"ApproximateReceiveCount\":\"-3\"}}]}");
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].receive_count, INT32_MAX);
  EXPECT_EQ((*r)[1].receive_count, 0);
}

TEST(sqs_receive, numeric_attributes_are_tolerated) {
  auto r = sqs::parse_receive("{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
                              "\"Body\":\"b\",\"Attributes\":{\"ApproximateReceiveCount\":2,"
                              "\"SentTimestamp\":5}}]}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->at(0).receive_count, 2);
  EXPECT_EQ(r->at(0).sent_at_ms, 5);
}

TEST(sqs_receive, malformed_answers_are_transient_errors) {
  // A message whose body does not match its MD5OfBody.
  const char* wrong_md5
      = "{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\",\"Body\":\"b\","
        "\"MD5OfBody\":\"00000000000000000000000000000000\"}]}";
  for (auto body : {"not json", "[]", "{\"Messages\":{}}",
                    "{\"Messages\":[{\"ReceiptHandle\":\"r\",\"Body\":\"b\"}]}",
                    "{\"Messages\":[{\"MessageId\":\"m\",\"Body\":\"b\"}]}", wrong_md5}) {
    auto r = sqs::parse_receive(body);
    ASSERT_FALSE(r) << body;
    EXPECT_TRUE(r.error().transient()) << body;
    EXPECT_EQ(r.error().code, "sqs.bad_response") << body;
  }
}

// ---- errors ---------------------------------------------------------------------------------

TEST(sqs_errors, header_code_wins_over_type) {
  auto e = sqs::parse_error(sqs_error(400, "com.amazonaws.sqs#QueueDoesNotExist",
                                      "The specified queue does not exist.",
                                      "AWS.SimpleQueueService.NonExistentQueue;Sender"));
  EXPECT_EQ(e.code, "sqs.NonExistentQueue");
  EXPECT_EQ(e.message, "The specified queue does not exist.");
  EXPECT_TRUE(e.permanent());
}

TEST(sqs_errors, type_after_hash_without_header_and_capitalised_message) {
  auto e = sqs::parse_error(make_response(
      400, "{\"__type\":\"com.amazonaws.sqs#QueueDoesNotExist\",\"Message\":\"gone\"}"));
  EXPECT_EQ(e.code, "sqs.QueueDoesNotExist");
  EXPECT_EQ(e.message, "gone");
  EXPECT_TRUE(e.permanent());
  auto plain = sqs::parse_error(make_response(400, "{\"__type\":\"InvalidParameterValue\"}"));
  EXPECT_EQ(plain.code, "sqs.InvalidParameterValue");
  EXPECT_TRUE(plain.permanent());
}

TEST(sqs_errors, classification) {
  struct row {
    long status;
    const char* type;
    const char* header;
    const char* code;
    bool transient;
  };
  for (auto& r : std::vector<row>{
           {403, "com.amazonaws.sqs#RequestThrottled", "", "sqs.RequestThrottled", true},
           {400, "com.amazonaws.sqs#ThrottlingException", "", "sqs.ThrottlingException", true},
           {400, "com.amazonaws.sqs#OverLimit", "AWS.SimpleQueueService.OverLimit;Sender",
            "sqs.OverLimit", true},
           {500, "com.amazonaws.sqs#InternalError", "", "sqs.InternalError", true},
           {503, "com.amazonaws.sqs#ServiceUnavailable", "", "sqs.ServiceUnavailable", true},
           {500, "com.amazonaws.sqs#SomethingNew", "", "sqs.SomethingNew", true},
           {400, "com.amazonaws.sqs#SomethingNew", "SomethingNew;Receiver", "sqs.SomethingNew",
            true},
           {403, "com.amazon.coral.service#AccessDeniedException", "", "sqs.AccessDeniedException",
            false},
           {403, "com.amazonaws.sqs#SignatureDoesNotMatch", "", "sqs.SignatureDoesNotMatch", false},
           {403, "com.amazonaws.sqs#InvalidClientTokenId", "", "sqs.InvalidClientTokenId", false},
           {400, "com.amazonaws.sqs#InvalidParameterValue", "", "sqs.InvalidParameterValue", false},
           {404, "com.amazonaws.sqs#ReceiptHandleIsInvalid",
            "AWS.SimpleQueueService.ReceiptHandleIsInvalid;Sender", "sqs.ReceiptHandleIsInvalid",
            false},
           {400, "com.amazonaws.sqs#SomethingNew", "", "sqs.SomethingNew", false},
       }) {
    auto e = sqs::parse_error(sqs_error(r.status, r.type, "m", r.header));
    EXPECT_EQ(e.code, r.code) << r.type;
    EXPECT_EQ(e.transient(), r.transient) << r.type;
  }
}

TEST(sqs_errors, non_json_bodies_and_retry_after) {
  auto html = sqs::parse_error(make_response(502, "<html><body>Bad Gateway</body></html>"));
  EXPECT_EQ(html.code, "sqs.http_502");
  EXPECT_TRUE(html.transient());
  EXPECT_NE(html.message.find("Bad Gateway"), std::string::npos);
  auto empty = sqs::parse_error(make_response(403, ""));
  EXPECT_EQ(empty.code, "sqs.http_403");
  EXPECT_TRUE(empty.permanent());
  auto slow = sqs::parse_error(make_response(503, "", {{"Retry-After", "7"}}));
  EXPECT_EQ(slow.retry_after_ms, 7000);
  EXPECT_TRUE(slow.transient());
  EXPECT_EQ(sqs::parse_error(make_response(503, "")).retry_after_ms, -1);
  // Seconds * 1000 overflowed int64_t; the wait is clamped to max_retry_after_ms.
  EXPECT_EQ(sqs::parse_error(make_response(503, "", {{"Retry-After", "9223372036854775807"}}))
                .retry_after_ms,
            max_retry_after_ms);
}

TEST(sqs_errors, deeply_nested_answers_are_bad_responses_not_crashes) {
  // A recursive JSON parser ran out of stack on a megabyte of '['.
  std::string deep(1 << 20, '[');
  auto r = sqs::parse_receive(deep);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "sqs.bad_response");
  EXPECT_FALSE(sqs::parse_batch(deep));
  EXPECT_EQ(sqs::parse_error(make_response(500, deep)).code, "sqs.http_500");
}

TEST(sqs_errors, transport_errors_pass_through_with_their_class) {
  auto http = std::make_shared<fake_http_client>([](const http_request&) -> result<http_response> {
    return error::make_transient("http.timeout", "no answer");
  });
  auto q = make_queue(http);
  auto r
      = await<std::vector<queue_message>>([&](auto cb) { q->receive(1, 1s, 30s, std::move(cb)); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "http.timeout");
  EXPECT_TRUE(r.error().transient());
  auto s = await<queue_stats>([&](auto cb) { q->stats(std::move(cb)); });
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "http.timeout");
}

// ---- batches ----------------------------------------------------------------------------------

TEST(sqs_batch, delete_splits_into_tens_and_keeps_input_order) {
  auto http
      = std::make_shared<fake_http_client>([](const http_request& req) -> result<http_response> {
          EXPECT_EQ(op_of(req), "AmazonSQS.DeleteMessageBatch");
          return make_response(200, batch_answer(req));
        });
  auto q = make_queue(http);
  std::vector<std::string> receipts;
  receipts.reserve(23);
  for (int i = 0; i < 23; ++i)
    receipts.push_back("receipt-" + std::to_string(i));
  auto r = await<std::vector<batch_entry_result>>(
      [&](auto cb) { q->remove(receipts, std::move(cb)); });
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 23u);
  for (size_t i = 0; i < 23; ++i) {
    EXPECT_EQ((*r)[i].ref, receipts[i]);
    EXPECT_FALSE((*r)[i].failed);
  }
  auto reqs = http->requests();
  ASSERT_EQ(reqs.size(), 3u);
  std::multiset<size_t> sizes;
  std::set<std::string> seen;
  for (auto& req : reqs) {
    auto body = json(req.body);
    sizes.insert(body["Entries"].Size());
    std::set<std::string> ids;
    for (auto& e : body["Entries"].GetArray()) {
      std::string id = e["Id"].GetString();
      EXPECT_TRUE(sqs::valid_entry_id(id)) << id;
      ids.insert(id);
      seen.insert(e["ReceiptHandle"].GetString());
    }
    EXPECT_EQ(ids.size(), body["Entries"].Size()) << "ids unique within a call";
  }
  EXPECT_EQ(sizes, (std::multiset<size_t>{3, 10, 10}));
  EXPECT_EQ(seen.size(), 23u);
}

TEST(sqs_batch, delete_with_a_stale_receipt_is_not_a_failure_but_other_entry_errors_are) {
  auto http
      = std::make_shared<fake_http_client>([](const http_request& req) -> result<http_response> {
          // Entry 1: stale receipt; entry 2: a server-side fault; entry 3: not mentioned at all.
          auto answer = batch_answer(
              req, {{"1", {"ReceiptHandleIsInvalid", true}}, {"2", {"InternalError", false}}});
          auto pos = answer.find("{\"Id\":\"3\"},");
          if (pos != std::string::npos)
            answer.erase(pos, std::string{"{\"Id\":\"3\"},"}.size());
          return make_response(200, answer);
        });
  auto q = make_queue(http);
  auto r = await<std::vector<batch_entry_result>>([&](auto cb) {
    q->remove({"a", "stale", "b", "c", "d"}, std::move(cb));
  });
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 5u);
  EXPECT_FALSE((*r)[0].failed);
  EXPECT_FALSE((*r)[1].failed) << "a stale receipt on delete means the message is already gone";
  EXPECT_TRUE((*r)[2].failed);
  EXPECT_EQ((*r)[2].error.code, "sqs.InternalError");
  EXPECT_TRUE((*r)[2].error.transient());
  EXPECT_TRUE((*r)[3].failed);
  EXPECT_EQ((*r)[3].error.code, "sqs.bad_response");
  EXPECT_FALSE((*r)[4].failed);
}

TEST(sqs_batch, whole_call_error_fails_only_that_calls_entries) {
  std::atomic<int> calls{0};
  auto http
      = std::make_shared<fake_http_client>([&](const http_request& req) -> result<http_response> {
          if (calls++ == 0)
            return sqs_error(500, "com.amazonaws.sqs#InternalError", "try again");
          return make_response(200, batch_answer(req));
        });
  auto q = make_queue(http);
  std::vector<std::string> receipts(15, "r");
  for (size_t i = 0; i < receipts.size(); ++i)
    receipts[i] += std::to_string(i);
  auto r = await<std::vector<batch_entry_result>>(
      [&](auto cb) { q->remove(receipts, std::move(cb)); });
  ASSERT_TRUE(r);
  auto failed = std::count_if(r->begin(), r->end(), [](auto& e) { return e.failed; });
  auto first_chunk = json(http->requests().at(0).body)["Entries"].Size();
  EXPECT_EQ(static_cast<size_t>(failed), first_chunk);
  for (auto& e : *r)
    if (e.failed) {
      EXPECT_EQ(e.error.code, "sqs.InternalError");
      EXPECT_TRUE(e.error.transient());
    }
}

TEST(sqs_batch, single_delete_answered_with_whole_call_invalid_receipt_counts_as_done) {
  auto http = std::make_shared<fake_http_client>([](const http_request&) -> result<http_response> {
    return sqs_error(404, "com.amazonaws.sqs#ReceiptHandleIsInvalid",
                     "The input receipt handle is invalid.",
                     "AWS.SimpleQueueService.ReceiptHandleIsInvalid;Sender");
  });
  auto q = make_queue(http);
  auto r
      = await<std::vector<batch_entry_result>>([&](auto cb) { q->remove({"x"}, std::move(cb)); });
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->at(0).failed);
}

TEST(sqs_batch, empty_batches_answer_at_once_without_requests) {
  auto http = std::make_shared<fake_http_client>();
  auto q = make_queue(http);
  auto a = await<std::vector<batch_entry_result>>([&](auto cb) { q->remove({}, std::move(cb)); });
  auto b = await<std::vector<batch_entry_result>>(
      [&](auto cb) { q->change_visibility({}, std::move(cb)); });
  auto c = await<std::vector<batch_entry_result>>([&](auto cb) { q->send({}, std::move(cb)); });
  ASSERT_TRUE(a && b && c);
  EXPECT_TRUE(a->empty() && b->empty() && c->empty());
  EXPECT_EQ(http->request_count(), 0u);
}

TEST(sqs_batch, change_visibility_reports_stale_receipts_and_refuses_bad_timeouts) {
  auto http
      = std::make_shared<fake_http_client>([](const http_request& req) -> result<http_response> {
          EXPECT_EQ(op_of(req), "AmazonSQS.ChangeMessageVisibilityBatch");
          auto body = json(req.body);
          EXPECT_EQ(body["Entries"].Size(), 2u) << "the refused entry is not sent";
          for (auto& e : body["Entries"].GetArray())
            EXPECT_TRUE(e["VisibilityTimeout"].IsInt());
          return make_response(200, batch_answer(req, {{"1", {"ReceiptHandleIsInvalid", true}}}));
        });
  auto q = make_queue(http);
  auto r = await<std::vector<batch_entry_result>>([&](auto cb) {
    q->change_visibility({{"good", 60s}, {"stale", 60s}, {"bad", 50'000s}}, std::move(cb));
  });
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 3u);
  EXPECT_FALSE((*r)[0].failed);
  EXPECT_EQ((*r)[0].ref, "good");
  EXPECT_TRUE((*r)[1].failed);
  EXPECT_EQ((*r)[1].error.code, "sqs.ReceiptHandleIsInvalid");
  EXPECT_TRUE((*r)[1].error.permanent()) << "the message is no longer ours";
  EXPECT_TRUE((*r)[2].failed);
  EXPECT_EQ((*r)[2].error.code, "sqs.bad_argument");
  EXPECT_EQ(http->request_count(), 1u);
}

TEST(sqs_batch, send_assigns_message_ids_delays_and_refuses_bad_bodies_locally) {
  auto http = std::make_shared<fake_http_client>([](const http_request& req)
                                                     -> result<http_response> {
    EXPECT_EQ(op_of(req), "AmazonSQS.SendMessageBatch");
    return make_response(200, batch_answer(req, {{"3", {"InvalidMessageContents", true}}}, true));
  });
  auto q = make_queue(http);
  std::vector<outgoing_message> msgs{{"plain", 0s},
                                     {"delayed", 30s},
                                     {"bad \xC3\x28 utf8", 0s},
                                     {"server refuses \x01", 0s},
                                     {"too late", 901s},
                                     {std::string(sqs::max_message_bytes + 1, 'x'), 0s}};
  auto r = await<std::vector<batch_entry_result>>([&](auto cb) { q->send(msgs, std::move(cb)); });
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), msgs.size());
  EXPECT_FALSE((*r)[0].failed);
  EXPECT_EQ((*r)[0].ref, "mid-0");
  EXPECT_FALSE((*r)[1].failed);
  EXPECT_EQ((*r)[1].ref, "mid-1");
  EXPECT_EQ((*r)[2].error.code, "sqs.invalid_body");
  EXPECT_TRUE((*r)[3].failed);
  EXPECT_EQ((*r)[3].error.code, "sqs.InvalidMessageContents");
  EXPECT_TRUE((*r)[3].error.permanent());
  EXPECT_EQ((*r)[4].error.code, "sqs.bad_argument");
  EXPECT_EQ((*r)[5].error.code, "sqs.message_too_large");
  auto reqs = http->requests();
  ASSERT_EQ(reqs.size(), 1u);
  auto body = json(reqs[0].body);
  ASSERT_EQ(body["Entries"].Size(), 3u);
  EXPECT_FALSE(body["Entries"][0].HasMember("DelaySeconds"));
  EXPECT_EQ(body["Entries"][1]["DelaySeconds"].GetInt(), 30);
  EXPECT_STREQ(body["Entries"][2]["MessageBody"].GetString(), "server refuses \x01");
}

TEST(sqs_batch, a_messages_tenant_is_its_message_group_for_fair_queues) {
  auto http
      = std::make_shared<fake_http_client>([](const http_request& req) -> result<http_response> {
          return make_response(200, batch_answer(req, {}, true));
        });
  auto q = make_queue(http);
  std::vector<outgoing_message> msgs{{"of a tenant", 0s}, {"of none", 0s}};
  msgs[0].tenant = "0193a000-0000-7000-8000-00000000000a";
  auto r = await<std::vector<batch_entry_result>>([&](auto cb) { q->send(msgs, std::move(cb)); });
  ASSERT_TRUE(r);
  auto reqs = http->requests();
  ASSERT_EQ(reqs.size(), 1u);
  auto body = json(reqs[0].body);
  ASSERT_EQ(body["Entries"].Size(), 2u);
  EXPECT_STREQ(body["Entries"][0]["MessageGroupId"].GetString(),
               "0193a000-0000-7000-8000-00000000000a");
  EXPECT_FALSE(body["Entries"][1].HasMember("MessageGroupId"));
}

TEST(sqs_batch, send_splits_by_count_and_by_total_size) {
  auto http
      = std::make_shared<fake_http_client>([](const http_request& req) -> result<http_response> {
          return make_response(200, batch_answer(req, {}, true));
        });
  auto q = make_queue(http);
  std::vector<outgoing_message> msgs;
  msgs.reserve(15);
  for (int i = 0; i < 12; ++i)
    msgs.push_back({"small " + std::to_string(i), 0s});
  for (int i = 0; i < 3; ++i)
    msgs.push_back({std::string(size_t{400} * 1024, 'a' + i), 0s});
  auto r = await<std::vector<batch_entry_result>>([&](auto cb) { q->send(msgs, std::move(cb)); });
  ASSERT_TRUE(r);
  for (auto& e : *r)
    EXPECT_FALSE(e.failed) << e.error.describe();
  std::set<std::string> ids;
  for (auto& e : *r)
    ids.insert(e.ref);
  EXPECT_EQ(ids.size(), msgs.size());
  for (auto& req : http->requests()) {
    auto body = json(req.body);
    size_t total = 0;
    for (auto& e : body["Entries"].GetArray())
      total += e["MessageBody"].GetStringLength();
    EXPECT_LE(body["Entries"].Size(), 10u);
    EXPECT_LE(total, sqs::max_message_bytes);
  }
  EXPECT_GE(http->request_count(), 3u);
}

// ---- stats and setup --------------------------------------------------------------------------

TEST(sqs_stats, attribute_strings_become_numbers) {
  auto http
      = std::make_shared<fake_http_client>([](const http_request& req) -> result<http_response> {
          EXPECT_EQ(op_of(req), "AmazonSQS.GetQueueAttributes");
          return make_response(200, "{\"Attributes\":{\"ApproximateNumberOfMessages\":\"12\","
                                    "\"ApproximateNumberOfMessagesNotVisible\":\"3\"}}");
        });
  auto q = make_queue(http);
  auto s = await<queue_stats>([&](auto cb) { q->stats(std::move(cb)); });
  ASSERT_TRUE(s);
  EXPECT_EQ(s->visible, 12);
  EXPECT_EQ(s->in_flight, 3);
  EXPECT_EQ(s->delayed, 0);
  EXPECT_EQ(s->oldest_age_seconds, 0);
  auto bad = sqs::parse_stats("{\"Attributes\":{\"ApproximateNumberOfMessages\":\"many\"}}");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "sqs.bad_response");
}

TEST(sqs_setup, queue_with_dead_letter_redrive) {
  auto http
      = std::make_shared<fake_http_client>([](const http_request& req) -> result<http_response> {
          auto body = json(req.body);
          if (op_of(req) == "AmazonSQS.CreateQueue") {
            std::string name = body["QueueName"].GetString();
            return make_response(200, "{\"QueueUrl\":\"https://q/" + name + "\"}");
          }
          if (op_of(req) == "AmazonSQS.GetQueueAttributes")
            return make_response(200,
                                 "{\"Attributes\":{\"QueueArn\":\"arn:aws:sqs:eu-west-1:1:dlq\"}}");
          return make_response(400, "{}");
        });
  sqs_client client{http, test_connection()};
  sqs_queue_settings settings;
  settings.visibility_timeout_seconds = 120;
  auto r = await<std::pair<std::string, std::string>>([&](auto cb) {
    client.create_queue_with_dead_letter("jobs", "jobs-dlq", 4, settings, std::move(cb));
  });
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->first, "https://q/jobs");
  EXPECT_EQ(r->second, "https://q/jobs-dlq");
  auto reqs = http->requests();
  ASSERT_EQ(reqs.size(), 3u);
  auto last = json(reqs[2].body);
  EXPECT_STREQ(last["QueueName"].GetString(), "jobs");
  EXPECT_STREQ(last["Attributes"]["VisibilityTimeout"].GetString(), "120");
  auto policy = json(last["Attributes"]["RedrivePolicy"].GetString());
  EXPECT_STREQ(policy["deadLetterTargetArn"].GetString(), "arn:aws:sqs:eu-west-1:1:dlq");
  EXPECT_STREQ(policy["maxReceiveCount"].GetString(), "4");
}

// ---- protocol helpers -------------------------------------------------------------------------

TEST(sqs_protocol, entry_ids_and_bodies) {
  EXPECT_TRUE(sqs::valid_entry_id("a-Z_09"));
  EXPECT_TRUE(sqs::valid_entry_id(std::string(80, 'a')));
  EXPECT_FALSE(sqs::valid_entry_id(std::string(81, 'a')));
  EXPECT_FALSE(sqs::valid_entry_id(""));
  EXPECT_FALSE(sqs::valid_entry_id("a.b"));
  EXPECT_TRUE(sqs::validate_body("plain \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(sqs::validate_body("\xC0\xAF"));     // overlong '/'
  EXPECT_FALSE(sqs::validate_body("\xED\xA0\x80")); // surrogate
  EXPECT_FALSE(sqs::validate_body("\xE2\x82"));     // truncated
  EXPECT_FALSE(sqs::validate_body("\x80"));         // stray continuation
  EXPECT_TRUE(sqs::validate_body(std::string(sqs::max_message_bytes, 'x')));
}

TEST(sqs_protocol, batch_answers_with_missing_lists_and_string_sender_fault) {
  auto a = sqs::parse_batch("{\"Failed\":[{\"Id\":\"0\",\"SenderFault\":\"false\","
                            "\"Code\":\"InternalError\"}]}");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->size(), 1u);
  EXPECT_FALSE(a->at(0).sender_fault);
  EXPECT_TRUE(sqs::entry_error(a->at(0)).transient());
  auto b = sqs::parse_batch("{\"Successful\":[{\"Id\":\"0\"}]}");
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->at(0).ok);
  EXPECT_FALSE(sqs::parse_batch("{\"Successful\":{}}"));
}

TEST(sqs_batch, extension_past_the_12_hour_total_is_refused_permanently) {
  auto http
      = std::make_shared<fake_http_client>([](const http_request& req) -> result<http_response> {
          return make_response(200, batch_answer(req, {{"0", {"InvalidParameterValue", true}}}));
        });
  auto q = make_queue(http);
  auto r = await<std::vector<batch_entry_result>>([&](auto cb) {
    q->change_visibility({{"held-for-12h", 600s}}, std::move(cb));
  });
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->at(0).failed);
  EXPECT_EQ(r->at(0).error.code, "sqs.InvalidParameterValue");
  EXPECT_TRUE(r->at(0).error.permanent());
}

// ---- lifetime -----------------------------------------------------------------------------------

TEST(sqs_lifetime, queue_destroyed_while_calls_are_in_flight_still_answers_them) {
  std::promise<void> gate;
  auto opened = gate.get_future().share();
  auto http = std::make_shared<fake_http_client>(
      [opened](const http_request& req) -> result<http_response> {
        opened.wait();
        if (op_of(req) == "AmazonSQS.DeleteMessageBatch")
          return make_response(200, batch_answer(req));
        return make_response(200, "{}");
      });
  auto q = make_queue(http);
  auto r = await<std::vector<batch_entry_result>>([&](auto cb) {
    q->remove({"a", "b"}, std::move(cb));
    q.reset();
    gate.set_value();
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->size(), 2u);
}
