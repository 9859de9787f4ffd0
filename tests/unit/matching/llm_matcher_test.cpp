// llm_matcher against the fake http_client: the request (strict schema, the candidates), the
// validation of answers (unknown ids, bad kinds, confidence out of range), the errors'
// classification and the in-process retries, exactly one callback.
#include <atomic>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/matching/llm_matcher.hpp"
#include "tests/support/http/fake_http_client.hpp"
#include "tests/support/llm/thread_timer.hpp"
#include "tests/unit/matching/matching_samples.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using test::fake_http_client;
using test::make_response;

namespace {

using test::id;

match_document document(uint64_t n, const std::string& number) {
  match_document d;
  d.id = id(n);
  d.tenant_id = id(999);
  d.file_name = "doc" + std::to_string(n) + ".pdf";
  d.features.kind = "invoice";
  d.features.number = number;
  d.features.counterparty = "Acme Inc.";
  d.features.normalized_counterparty = "acme";
  d.features.total = 119;
  d.features.currency = "EUR";
  d.features.searchable_text = "invoice " + number;
  d.structured_data = R"({"invoice_number":")" + number + R"("})";
  return d;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string completion(const std::string& content) {
  return R"({"id":"x","object":"chat.completion","model":"gpt-test","choices":[{"index":0,)"
         R"("finish_reason":"stop","message":{"role":"assistant","content":)"
         + quoted(content) + R"(}}],"usage":{"prompt_tokens":10,"completion_tokens":5}})";
}

std::string match_json(const std::string& doc_id, const std::string& kind = "same_invoice",
                       double conf = 0.9) {
  return R"({"matches":[{"document_id":")" + doc_id + R"(","kind":")" + kind + R"(","confidence":)"
         + std::to_string(conf) + R"(,"reason":"number and total agree"}]})";
}

llm_matcher_options fast_options() {
  llm_matcher_options o;
  o.base_url = "http://llm.test";
  o.api_key = "sk-test-secret-123456";
  o.model = "gpt-test";
  o.base_backoff = 5ms;
  return o;
}

result<std::vector<match_edge>> run(fake_http_client& http, std::vector<match_document> candidates,
                                    llm_matcher_options opts = fast_options()) {
  thread_timer t;
  llm_matcher m{http, t, std::move(opts)};
  std::promise<result<std::vector<match_edge>>> p;
  auto f = p.get_future();
  std::atomic<int> calls{0};
  m.decide(document(1, "INV1"), std::move(candidates), [&](result<std::vector<match_edge>> r) {
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

std::vector<match_document> two() {
  return {document(2, "INV1"), document(3, "CN7")};
}

} // namespace

TEST(llm_matcher_request, strict_schema_with_document_and_candidates) {
  auto o = fast_options();
  auto p = build_match_prompt(o, document(1, "INV1"), two());
  auto body = build_chat_body(o, p);
  rapidjson::Document d;
  d.Parse(body.c_str());
  ASSERT_FALSE(d.HasParseError());
  const auto& js = d["response_format"]["json_schema"];
  EXPECT_STREQ(js["name"].GetString(), "match_decision");
  EXPECT_TRUE(js["strict"].GetBool());
  const auto& kind = js["schema"]["properties"]["matches"]["items"]["properties"]["kind"];
  EXPECT_EQ(kind["enum"].Size(), 5u);
  rapidjson::Document user;
  user.Parse(d["messages"][1]["content"].GetString());
  ASSERT_FALSE(user.HasParseError());
  EXPECT_EQ(std::string{user["document"]["document_id"].GetString()}, id(1).str());
  ASSERT_EQ(user["candidates"].Size(), 2u);
  EXPECT_EQ(std::string{user["candidates"][1]["document_id"].GetString()}, id(3).str());
  EXPECT_EQ(body.find(o.api_key), std::string::npos);
  // At most max_candidates are shown.
  o.max_candidates = 1;
  user.Parse(build_match_prompt(o, document(1, "INV1"), two()).user.c_str());
  EXPECT_EQ(user["candidates"].Size(), 1u);
}

TEST(llm_matcher_parse, valid_answers) {
  auto cs = two();
  auto r = parse_match_answer(match_json(id(2).str()), cs);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].other, id(2));
  EXPECT_EQ((*r)[0].kind, match_kind::same_invoice);
  EXPECT_DOUBLE_EQ((*r)[0].confidence, 0.9);
  EXPECT_EQ((*r)[0].reason, "number and total agree");
  auto none = parse_match_answer(R"({"matches":[]})", cs);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  // A candidate named twice keeps its strongest edge; low confidence is dropped, not an error.
  auto twice = parse_match_answer(
      R"({"matches":[{"document_id":")" + id(2).str()
          + R"(","kind":"related","confidence":0.7,"reason":"a"},)"
            R"({"document_id":")"
          + id(2).str()
          + R"(","kind":"duplicate","confidence":0.6,"reason":"b"},)"
            R"({"document_id":")"
          + id(3).str() + R"(","kind":"credit_note","confidence":0.2,"reason":"c"}]})",
      cs, 0.5);
  ASSERT_TRUE(twice.ok()) << twice.error().describe();
  ASSERT_EQ(twice->size(), 1u);
  EXPECT_EQ((*twice)[0].kind, match_kind::duplicate);
}

TEST(llm_matcher_parse, invalid_answers_are_transient) {
  auto cs = two();
  auto code = [&](const std::string& content) {
    auto r = parse_match_answer(content, cs);
    EXPECT_FALSE(r.ok()) << content;
    if (r.ok())
      return std::string{};
    EXPECT_TRUE(r.error().transient());
    return r.error().code;
  };
  EXPECT_EQ(code("Sure! {matches: ["), "llm.invalid_json");
  EXPECT_EQ(code("[]"), "llm.schema_invalid");
  EXPECT_EQ(code("{}"), "llm.schema_invalid");
  EXPECT_EQ(code(R"({"matches":{}})"), "llm.schema_invalid");
  EXPECT_EQ(code(R"({"matches":[],"extra":1})"), "llm.schema_invalid");
  EXPECT_EQ(code(match_json(id(42).str())), "llm.schema_invalid"); // unknown id
  EXPECT_EQ(code(match_json(id(1).str())), "llm.schema_invalid");  // the document itself
  EXPECT_EQ(code(match_json(id(2).str(), "sibling")), "llm.schema_invalid");
  EXPECT_EQ(code(match_json(id(2).str(), "duplicate", 1.5)), "llm.schema_invalid");
  EXPECT_EQ(code(match_json(id(2).str(), "duplicate", -0.1)), "llm.schema_invalid");
  EXPECT_EQ(code(R"({"matches":[{"document_id":")" + id(2).str()
                 + R"(","kind":"duplicate","confidence":"high","reason":"x"}]})"),
            "llm.schema_invalid");
  EXPECT_EQ(code(R"({"matches":[{"document_id":")" + id(2).str()
                 + R"(","kind":"duplicate","confidence":1}]})"),
            "llm.schema_invalid");
  EXPECT_EQ(code(R"({"matches":[)" + std::string(10'000, '[') + std::string(10'000, ']') + "]}"),
            "llm.schema_invalid");
}

TEST(llm_matcher_decide, success_posts_once) {
  fake_http_client http{[](const http_request&) {
    return make_response(200, completion(match_json(id(3).str(), "credit_note")));
  }};
  auto r = run(http, two());
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].other, id(3));
  EXPECT_EQ((*r)[0].kind, match_kind::credit_note);
  auto reqs = http.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].url, "http://llm.test/v1/chat/completions");
  EXPECT_EQ(test::header_of(reqs[0], "Authorization"), "Bearer sk-test-secret-123456");
}

TEST(llm_matcher_decide, no_candidates_is_no_match_without_a_request) {
  fake_http_client http;
  auto r = run(http, {});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(http.request_count(), 0u);
}

TEST(llm_matcher_decide, transient_classes_are_retried_three_times) {
  struct scenario {
    result<http_response> answer;
    std::string code;
  };
  std::vector<scenario> scenarios{
      {make_response(429, R"({"error":{"message":"Rate limit","code":"rate_limit_exceeded"}})"),
       "llm.rate_limited"},
      // Every 429 is transient, a quota message too.
      {make_response(
           429,
           R"({"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}})"),
       "llm.rate_limited"},
      {make_response(500, R"({"error":{"message":"boom"}})"), "llm.server_error"},
      {make_response(503, "Service Unavailable"), "llm.server_error"},
      {error::make_transient("http.timeout", "timed out"), "llm.timeout"},
      {error::make_transient("http.connect", "connection refused"), "llm.connect"},
      {make_response(200, "<html>bad gateway</html>"), "llm.invalid_response"},
      {make_response(200, completion("not json at all")), "llm.invalid_json"},
      {make_response(200, completion(match_json(id(42).str()))), "llm.schema_invalid"},
  };
  for (const auto& s : scenarios) {
    SCOPED_TRACE(s.code);
    fake_http_client http{[a = s.answer](const http_request&) { return a; }};
    auto r = run(http, two());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, s.code) << r.error().describe();
    EXPECT_TRUE(r.error().transient());
    EXPECT_NE(r.error().message.find("attempt 3 of 3"), std::string::npos) << r.error().message;
    EXPECT_EQ(http.request_count(), 3u);
  }
}

TEST(llm_matcher_decide, permanent_classes_are_not_retried) {
  struct scenario {
    long status;
    std::string body;
    std::string code;
  };
  std::vector<scenario> scenarios{
      {400,
       R"({"error":{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded"}})",
       "llm.context_exceeded"},
      {401,
       R"({"error":{"message":"Incorrect API key provided: sk-test-secret-123456","code":"invalid_api_key"}})",
       "llm.unauthorized"},
      {403,
       R"({"error":{"message":"Project does not have access to model","code":"model_not_found"}})",
       "llm.forbidden"},
  };
  for (const auto& s : scenarios) {
    SCOPED_TRACE(s.code);
    fake_http_client http{[s](const http_request&) { return make_response(s.status, s.body); }};
    auto r = run(http, two());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, s.code);
    EXPECT_TRUE(r.error().permanent());
    EXPECT_EQ(http.request_count(), 1u);
    EXPECT_EQ(r.error().message.find("sk-test-secret-123456"), std::string::npos);
  }
}

TEST(llm_matcher_decide, a_bad_answer_then_a_good_one_succeeds) {
  std::atomic<int> n{0};
  fake_http_client http{[&](const http_request&) {
    return ++n == 1 ? make_response(200, completion(match_json(id(2).str(), "cousin")))
                    : make_response(200, completion(match_json(id(2).str())));
  }};
  thread_timer t;
  llm_matcher m{http, t, fast_options()};
  std::promise<result<std::vector<match_edge>>> p;
  m.decide(document(1, "INV1"), two(),
           [&](result<std::vector<match_edge>> r) { p.set_value(std::move(r)); });
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  auto r = f.get();
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->size(), 1u);
  EXPECT_EQ(m.stats().requests, 2u);
  EXPECT_EQ(m.stats().retries, 1u);
  t.shutdown();
}

TEST(llm_matcher_decide, a_stopped_timer_still_answers_once_and_never_with_no_match) {
  fake_http_client http{[](const http_request&) { return make_response(500, "{}"); }};
  auto o = fast_options();
  o.base_backoff = 10min;
  std::promise<result<std::vector<match_edge>>> p;
  auto f = p.get_future();
  std::atomic<int> calls{0};
  {
    thread_timer t;
    llm_matcher m{http, t, o};
    m.decide(document(1, "INV1"), two(), [&](result<std::vector<match_edge>> r) {
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
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "llm.cancelled");
  EXPECT_TRUE(r.error().transient());
  EXPECT_EQ(calls.load(), 1);
}

TEST(llm_matcher_options, defaults_are_three_attempts_from_2_s_with_jitter_and_a_transient_quota) {
  llm_matcher_options o;
  EXPECT_EQ(o.max_attempts, 3);
  EXPECT_EQ(o.base_backoff, 2000ms);
  EXPECT_GT(o.jitter, 0);
  EXPECT_FALSE(o.quota_is_permanent);
}
