// openai_extractor against the fake http_client: request shape, parsing and classification of
// every answer the servers send, retries with back-off and Retry-After, exactly one callback.
#include <atomic>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/extraction/extraction_schema.hpp"
#include "adapters/extraction/openai_extractor.hpp"
#include "tests/support/http/fake_http_client.hpp"
#include "tests/support/llm/thread_timer.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using test::fake_http_client;
using test::make_response;

namespace {

const std::string invoice_json
    = R"({"invoice_number":"INV-1","invoice_date":"2024-03-15","due_date":null,"supplier_name":"Acme",)"
      R"("supplier_address":null,"supplier_vat_id":null,"customer_name":null,"currency":"EUR",)"
      R"("line_items":[],"subtotal":100,"vat_amount":19,"total":119,"extraction_successful":true,)"
      R"("confidence":"high","missing_fields":["due_date"]})";

std::string completion(const std::string& content_json_value, const std::string& finish = "stop",
                       const std::string& refusal = "null") {
  return R"({"id":"x","object":"chat.completion","model":"gpt-test-2024","choices":[{"index":0,)"
         R"("finish_reason":")"
         + finish + R"(","message":{"role":"assistant","content":)" + content_json_value
         + R"(,"refusal":)" + refusal
         + R"(}}],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}})";
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

openai_options fast_options() {
  openai_options o;
  o.base_url = "http://llm.test";
  o.api_key = "sk-test-secret-123456";
  o.model = "gpt-test";
  o.base_backoff = 5ms;
  o.jitter = 0.5;
  return o;
}

result<extraction> run(fake_http_client& http, openai_options opts = fast_options()) {
  thread_timer t;
  openai_extractor ex{http, t, std::move(opts)};
  std::promise<result<extraction>> p;
  auto f = p.get_future();
  std::atomic<int> calls{0};
  ex.extract("Invoice INV-1 ...", [&](result<extraction> r) {
    if (++calls == 1)
      p.set_value(std::move(r));
  });
  if (f.wait_for(10s) != std::future_status::ready)
    return error::make_transient("test.timeout", "no answer within 10 s");
  auto r = f.get();
  t.shutdown();
  EXPECT_EQ(calls.load(), 1);
  return r;
}

result<extraction> once(long status, std::string body, const http_headers& headers = {}) {
  return parse_chat_response(make_response(status, std::move(body), headers), fast_options());
}

} // namespace

TEST(openai_request, has_model_messages_and_strict_schema) {
  auto o = fast_options();
  auto body = build_chat_request(o, "Rechnung Nr. 1");
  rapidjson::Document d;
  d.Parse(body.c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_STREQ(d["model"].GetString(), "gpt-test");
  ASSERT_EQ(d["messages"].Size(), 2u);
  EXPECT_STREQ(d["messages"][0]["role"].GetString(), "system");
  EXPECT_NE(std::string{d["messages"][1]["content"].GetString()}.find("Rechnung Nr. 1"),
            std::string::npos);
  const auto& rf = d["response_format"];
  EXPECT_STREQ(rf["type"].GetString(), "json_schema");
  EXPECT_TRUE(rf["json_schema"]["strict"].GetBool());
  EXPECT_FALSE(rf["json_schema"]["schema"]["additionalProperties"].GetBool());
  EXPECT_EQ(body.find(o.api_key), std::string::npos);
}

TEST(openai_request, carries_the_whole_schema_compact) {
  auto body = build_chat_request(fast_options(), "Rechnung Nr. 1");
  rapidjson::Document d;
  d.Parse(body.c_str());
  ASSERT_FALSE(d.HasParseError());
  rapidjson::Document schema;
  auto text = extraction_schema_json();
  schema.Parse(text.data(), text.size());
  ASSERT_FALSE(schema.HasParseError());
  EXPECT_TRUE(d["response_format"]["json_schema"]["schema"] == schema);
  auto compact = compact_json(text);
  EXPECT_LT(compact.size(), text.size());
  EXPECT_NE(body.find(compact), std::string::npos);
}

TEST(openai_request, a_schema_that_is_no_json_object_is_sent_as_null) {
  EXPECT_EQ(compact_json(R"({ "a" : [1, 2] })"), R"({"a":[1,2]})");
  EXPECT_EQ(compact_json("[1]"), "");
  EXPECT_EQ(compact_json("{"), "");
  chat_prompt p;
  p.user = "text";
  p.schema_name = "invoice";
  auto body = build_chat_body(fast_options(), p);
  rapidjson::Document d;
  d.Parse(body.c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_TRUE(d["response_format"]["json_schema"]["schema"].IsNull());
}

TEST(openai_request, posts_to_chat_completions_with_bearer_key) {
  fake_http_client http{
      [](const http_request&) { return make_response(200, completion(quoted(invoice_json))); }};
  auto o = fast_options();
  o.base_url = "http://llm.test/v1/";
  auto r = run(http, o);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  auto reqs = http.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].url, "http://llm.test/v1/chat/completions");
  bool bearer = false;
  for (const auto& [k, v] : reqs[0].headers)
    bearer |= k == "Authorization" && v == "Bearer sk-test-secret-123456";
  EXPECT_TRUE(bearer);
  EXPECT_EQ(reqs[0].total_timeout, o.request_timeout);
}

TEST(openai_parse, success_with_token_accounting) {
  auto r = once(200, completion(quoted(invoice_json)));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->input_tokens, 100);
  EXPECT_EQ(r->output_tokens, 20);
  EXPECT_EQ(r->model, "gpt-test-2024");
  EXPECT_TRUE(r->extraction_successful);
  EXPECT_EQ(r->confidence, "high");
  EXPECT_EQ(r->missing_fields, std::vector<std::string>{"due_date"});
  // A Markdown fence around the JSON (servers without strict mode) is tolerated.
  EXPECT_TRUE(once(200, completion(quoted("```json\n" + invoice_json + "\n```"))).ok());
}

TEST(openai_parse, broken_answers_are_transient) {
  auto truncated = once(200, completion(quoted(invoice_json.substr(0, 50)), "length"));
  EXPECT_EQ(truncated.error().code, "llm.truncated");
  EXPECT_TRUE(truncated.error().transient());
  auto refusal = once(200, completion("null", "stop", "\"I can't help with that.\""));
  EXPECT_EQ(refusal.error().code, "llm.refusal");
  EXPECT_TRUE(refusal.error().transient());
  auto invalid = once(200, completion(quoted("{invoice_number: 1")));
  EXPECT_EQ(invalid.error().code, "llm.invalid_json");
  EXPECT_TRUE(invalid.error().transient());
  auto schema = once(200, completion(quoted(R"({"invoice_number":"1"})")));
  EXPECT_EQ(schema.error().code, "llm.schema_invalid");
  EXPECT_TRUE(schema.error().transient());
  EXPECT_EQ(once(200, "<html>bad gateway</html>").error().code, "llm.invalid_response");
  EXPECT_EQ(once(200, R"({"choices":[]})").error().code, "llm.empty_response");
  EXPECT_TRUE(once(200, R"({"choices":[]})").error().transient());
}

TEST(openai_parse, refusal_can_be_made_permanent) {
  auto o = fast_options();
  o.refusal_is_permanent = true;
  auto r = parse_chat_response(make_response(200, completion("null", "stop", "\"no\"")), o);
  EXPECT_TRUE(r.error().permanent());
}

TEST(openai_parse, error_bodies_are_classified) {
  auto rate = once(
      429,
      R"({"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}})",
      {{"retry-after", "7"}});
  EXPECT_EQ(rate.error().code, "llm.rate_limited");
  EXPECT_TRUE(rate.error().transient());
  EXPECT_EQ(rate.error().retry_after_ms, 7000);
  auto quota = once(
      429,
      R"({"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}})");
  EXPECT_EQ(quota.error().code, "llm.insufficient_quota");
  EXPECT_TRUE(quota.error().permanent());
  auto ctx = once(
      400,
      R"({"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}})");
  EXPECT_EQ(ctx.error().code, "llm.context_exceeded");
  EXPECT_TRUE(ctx.error().permanent());
  auto vllm = once(
      400,
      R"({"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400})");
  EXPECT_EQ(vllm.error().code, "llm.context_exceeded");
  EXPECT_TRUE(vllm.error().permanent());
  auto llama = once(
      400,
      R"({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}})");
  EXPECT_EQ(llama.error().code, "llm.context_exceeded");
  auto llama_old = once(
      500,
      R"({"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"server_error"}})");
  EXPECT_EQ(llama_old.error().code, "llm.context_exceeded");
  EXPECT_TRUE(llama_old.error().permanent());
  auto server
      = once(500, R"({"error":{"message":"The server had an error","type":"server_error"}})");
  EXPECT_EQ(server.error().code, "llm.server_error");
  EXPECT_TRUE(server.error().transient());
  EXPECT_TRUE(once(503, "Service Unavailable").error().transient());
  EXPECT_TRUE(
      once(529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})")
          .error()
          .transient());
  auto unauth = once(
      401,
      R"({"error":{"message":"Incorrect API key provided: sk-test-secret-123456.","type":"invalid_request_error","code":"invalid_api_key"}})");
  EXPECT_EQ(unauth.error().code, "llm.unauthorized");
  EXPECT_TRUE(unauth.error().permanent());
  EXPECT_EQ(unauth.error().message.find("sk-test-secret-123456"), std::string::npos)
      << unauth.error().message;
  EXPECT_TRUE(once(403, "{}").error().permanent());
  EXPECT_TRUE(once(404, R"({"error":{"message":"model not found"}})").error().permanent());
  EXPECT_TRUE(once(408, "").error().transient());
}

TEST(openai_parse, deeply_nested_answers_are_errors_not_crashes) {
  // A recursive JSON parser ran out of stack on a megabyte of '['; the schema validator and the
  // writer recurse too, so a deep answer from the model is refused before they see it.
  openai_options opts;
  std::string deep(1 << 20, '[');
  auto body = parse_chat_response(make_response(200, deep), opts);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.error().code, "llm.invalid_response");
  EXPECT_FALSE(parse_chat_response(make_response(500, deep), opts).ok());
  auto nested = std::string(10'000, '[') + std::string(10'000, ']');
  auto content = parse_chat_response(
      make_response(200, completion(quoted(R"({"line_items":)" + nested + "}"))), opts);
  ASSERT_FALSE(content.ok());
  EXPECT_EQ(content.error().code, "llm.invalid_json");
}

TEST(openai_parse, retry_after_headers) {
  EXPECT_EQ(
      retry_after_ms(make_response(429, "", {{"retry-after-ms", "250"}, {"retry-after", "9"}})),
      250);
  EXPECT_EQ(retry_after_ms(make_response(429, "", {{"retry-after", "1.5"}})), 1500);
  EXPECT_EQ(
      retry_after_ms(make_response(429, "", {{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}})),
      0);
  EXPECT_EQ(retry_after_ms(make_response(429, "", {{"retry-after", "soon"}})), -1);
  EXPECT_EQ(retry_after_ms(make_response(429, "")), -1);
  // A double beyond int64_t's range was converted (undefined behaviour).
  EXPECT_EQ(retry_after_ms(make_response(429, "", {{"retry-after-ms", "1e300"}})),
            max_retry_after_ms);
  EXPECT_EQ(retry_after_ms(make_response(429, "", {{"retry-after", "9223372036854775807"}})),
            max_retry_after_ms);
  EXPECT_EQ(
      retry_after_ms(make_response(429, "", {{"retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"}})),
      max_retry_after_ms);
}

TEST(openai_retry, transient_errors_are_retried_three_times_in_total) {
  fake_http_client http{
      [](const http_request&) { return make_response(500, R"({"error":{"message":"boom"}})"); }};
  auto r = run(http);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "llm.server_error");
  EXPECT_TRUE(r.error().transient());
  EXPECT_NE(r.error().message.find("attempt 3 of 3"), std::string::npos) << r.error().message;
  EXPECT_EQ(http.requests().size(), 3u);
}

TEST(openai_retry, permanent_errors_are_not_retried) {
  fake_http_client http{[](const http_request&) {
    return make_response(401, R"({"error":{"message":"bad key","code":"invalid_api_key"}})");
  }};
  auto r = run(http);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().permanent());
  EXPECT_EQ(http.requests().size(), 1u);
}

TEST(openai_retry, recovers_and_sums_tokens_over_attempts) {
  std::atomic<int> n{0};
  fake_http_client http{[&](const http_request&) {
    if (++n == 1)
      return make_response(200, completion(quoted(invoice_json.substr(0, 40)), "length"));
    return make_response(200, completion(quoted(invoice_json)));
  }};
  auto r = run(http);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->input_tokens, 200);
  EXPECT_EQ(r->output_tokens, 40);
  EXPECT_EQ(http.requests().size(), 2u);
}

TEST(openai_retry, transport_errors_are_transient_and_retried) {
  fake_http_client http{[](const http_request&) -> result<http_response> {
    return error::make_transient("http.timeout", "operation timed out after 100 ms");
  }};
  auto r = run(http);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "llm.timeout");
  EXPECT_TRUE(r.error().transient());
  EXPECT_EQ(http.requests().size(), 3u);
}

TEST(openai_retry, honours_retry_after_and_hands_long_waits_to_the_queue) {
  auto o = fast_options();
  o.base_backoff = 10s; // would time the test out if the header were ignored
  std::atomic<int> n{0};
  fake_http_client http{[&](const http_request&) {
    if (++n == 1)
      return make_response(429, R"({"error":{"code":"rate_limit_exceeded","message":"slow down"}})",
                           {{"retry-after-ms", "30"}});
    return make_response(200, completion(quoted(invoice_json)));
  }};
  auto start = std::chrono::steady_clock::now();
  auto r = run(http, o);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  EXPECT_EQ(http.requests().size(), 2u);

  fake_http_client slow{[](const http_request&) {
    return make_response(429, R"({"error":{"code":"rate_limit_exceeded","message":"slow down"}})",
                         {{"retry-after", "600"}});
  }};
  auto r2 = run(slow, fast_options());
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().retry_after_ms, 600'000);
  EXPECT_EQ(slow.requests().size(), 1u);
}

TEST(openai_retry, a_stopped_timer_still_answers_once) {
  fake_http_client http{[](const http_request&) { return make_response(500, "{}"); }};
  auto o = fast_options();
  o.base_backoff = 10min;
  std::promise<result<extraction>> p;
  auto f = p.get_future();
  std::atomic<int> calls{0};
  {
    thread_timer t;
    openai_extractor ex{http, t, o};
    ex.extract("x", [&](result<extraction> r) {
      if (++calls == 1)
        p.set_value(std::move(r));
    });
    // Wait until the retry is parked on the timer, then stop the timer.
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (t.pending() == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    ASSERT_EQ(t.pending(), 1u);
    t.shutdown();
  }
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  auto r = f.get();
  EXPECT_EQ(r.error().code, "llm.cancelled");
  EXPECT_EQ(calls.load(), 1);
}
