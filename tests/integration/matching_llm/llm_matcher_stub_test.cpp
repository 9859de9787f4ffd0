// llm_matcher over the real curl engine against the local chat-completions stub: success with
// and without edges, and every failure the stub can give (429, quota, 5xx, timeout, connection
// refused, garbage, truncated, refusal, schema-invalid, context window, 401, 403), each ending
// in its error class after the right number of requests.
#include <atomic>
#include <future>

#include <gtest/gtest.h>

#include "adapters/http/curl_engine.hpp"
#include "adapters/matching/llm_matcher.hpp"
#include "tests/support/llm/chat_stub.hpp"
#include "tests/support/llm/stub_client.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

uuid id(uint64_t n) {
  return uuid{0x0190000000007000ULL, 0x8000000000000000ULL | n};
}

match_document document(uint64_t n, const std::string& number,
                        const std::string& kind = "invoice") {
  match_document d;
  d.id = id(n);
  d.tenant_id = id(999);
  d.file_name = "doc" + std::to_string(n) + ".pdf";
  d.features.kind = kind;
  d.features.number = number;
  d.features.counterparty = "Acme Office Supplies Inc.";
  d.features.normalized_counterparty = "acme office supplies";
  d.features.total = 3529.46;
  d.features.currency = "USD";
  d.features.date = "2024-03-15";
  d.features.searchable_text = "acme office supplies inc. invoice number: " + number;
  d.structured_data = R"({"invoice_number":")" + number + R"(","total":3529.46})";
  return d;
}

struct outcome {
  result<std::vector<match_edge>> value = error{};
  int requests = 0;
  std::chrono::milliseconds elapsed{0};
};

class llm_matcher_stub : public ::testing::Test {
protected:
  static void SetUpTestSuite() { stub_ = new test::chat_stub(); }
  static void TearDownTestSuite() {
    delete stub_;
    stub_ = nullptr;
  }

  llm_matcher_options options(const std::string& model, std::chrono::milliseconds timeout = 5s) {
    llm_matcher_options o;
    o.base_url = stub_->base_url();
    o.api_key = "sk-stub-key-0002";
    o.model = model;
    o.base_backoff = 10ms;
    o.request_timeout = timeout;
    return o;
  }

  /// One decision with model "<scenario>:<test name>", the stub's requests for it counted.
  outcome run(const std::string& scenario, std::chrono::milliseconds timeout = 5s) {
    std::string model
        = scenario + ":" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    llm_matcher m{engine_, engine_, options(model, timeout)};
    auto p = std::make_shared<std::promise<result<std::vector<match_edge>>>>();
    auto f = p->get_future();
    auto calls = std::make_shared<std::atomic<int>>(0);
    auto start = std::chrono::steady_clock::now();
    m.decide(document(1, "INV20240117"),
             {document(2, "INV20240117"), document(3, "CN20240031", "credit_note")},
             [p, calls](result<std::vector<match_edge>> r) {
               if (++*calls == 1)
                 p->set_value(std::move(r));
             });
    outcome out;
    if (f.wait_for(60s) != std::future_status::ready) {
      ADD_FAILURE() << "no answer for " << scenario;
      return out;
    }
    out.value = f.get();
    out.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    out.requests = test::get_count(engine_, stub_->base_url() + "/count?model=" + model);
    EXPECT_EQ(calls->load(), 1);
    return out;
  }

  void expect_failure(const std::string& scenario, const std::string& code, error_class cls,
                      int requests, std::chrono::milliseconds timeout = 5s) {
    SCOPED_TRACE(scenario);
    auto o = run(scenario, timeout);
    ASSERT_FALSE(o.value.ok()) << scenario << " succeeded";
    EXPECT_EQ(o.value.error().code, code) << o.value.error().describe();
    EXPECT_EQ(o.value.error().cls, cls) << o.value.error().describe();
    EXPECT_EQ(o.requests, requests);
    EXPECT_NE(o.value.error().message.find("attempt " + std::to_string(requests) + " of 3"),
              std::string::npos)
        << o.value.error().message;
    EXPECT_EQ(o.value.error().message.find("sk-stub-key-0002"), std::string::npos);
  }

  static test::chat_stub* stub_;
  curl_engine engine_; // also the retry timer, as in ingestd run
};

test::chat_stub* llm_matcher_stub::stub_ = nullptr;

} // namespace

TEST_F(llm_matcher_stub, success_gives_the_validated_edges) {
  auto o = run("success");
  ASSERT_TRUE(o.value.ok()) << o.value.error().describe();
  EXPECT_EQ(o.requests, 1);
  ASSERT_EQ(o.value->size(), 1u);
  EXPECT_EQ((*o.value)[0].other, id(2));
  EXPECT_EQ((*o.value)[0].kind, match_kind::same_invoice);
  EXPECT_DOUBLE_EQ((*o.value)[0].confidence, 0.9);
  EXPECT_FALSE((*o.value)[0].reason.empty());
  auto auth = test::get_sync(
      engine_, stub_->base_url() + "/last_auth?model=success:success_gives_the_validated_edges");
  ASSERT_TRUE(auth.ok());
  EXPECT_NE(auth->body.find("Bearer sk-stub-key-0002"), std::string::npos);
}

TEST_F(llm_matcher_stub, no_match_is_an_empty_answer_not_an_error) {
  auto o = run("no_match");
  ASSERT_TRUE(o.value.ok()) << o.value.error().describe();
  EXPECT_TRUE(o.value->empty());
  EXPECT_EQ(o.requests, 1);
}

TEST_F(llm_matcher_stub, unusable_answers_are_retried_then_transient) {
  expect_failure("invalid_json", "llm.invalid_json", error_class::transient, 3);
  expect_failure("schema_invalid", "llm.schema_invalid", error_class::transient, 3);
  expect_failure("truncated", "llm.truncated", error_class::transient, 3);
  expect_failure("refusal", "llm.refusal", error_class::transient, 3);
}

TEST_F(llm_matcher_stub, rate_limits_are_transient_quota_included) {
  expect_failure("rate_limited", "llm.rate_limited", error_class::transient, 3);
  // Every HTTP 429 is transient, a quota message too.
  expect_failure("quota", "llm.rate_limited", error_class::transient, 3);
  auto o = run("rate_limited_seconds");
  ASSERT_FALSE(o.value.ok());
  EXPECT_EQ(o.requests, 3);
  EXPECT_GE(o.elapsed, 2000ms); // Retry-After: 1 honoured twice
  auto l = run("rate_limited_long");
  ASSERT_FALSE(l.value.ok());
  EXPECT_EQ(l.requests, 1); // a wait beyond max_retry_after goes to the queue's back-off
  EXPECT_TRUE(l.value.error().transient());
  EXPECT_EQ(l.value.error().retry_after_ms, 600'000);
}

TEST_F(llm_matcher_stub, server_errors_are_retried_and_recover) {
  expect_failure("server_error", "llm.server_error", error_class::transient, 3);
  auto o = run("flaky");
  ASSERT_TRUE(o.value.ok()) << o.value.error().describe();
  EXPECT_EQ(o.requests, 2);
  EXPECT_EQ(o.value->size(), 1u);
}

TEST_F(llm_matcher_stub, permanent_errors_are_not_retried) {
  expect_failure("context_openai", "llm.context_exceeded", error_class::permanent, 1);
  expect_failure("context_vllm", "llm.context_exceeded", error_class::permanent, 1);
  expect_failure("context_llamacpp", "llm.context_exceeded", error_class::permanent, 1);
  expect_failure("context_llamacpp_500", "llm.context_exceeded", error_class::permanent, 1);
  expect_failure("unauthorized", "llm.unauthorized", error_class::permanent, 1);
  expect_failure("forbidden", "llm.forbidden", error_class::permanent, 1);
}

TEST_F(llm_matcher_stub, a_hanging_server_times_out_three_times) {
  expect_failure("hang", "llm.timeout", error_class::transient, 3, 300ms);
}

TEST_F(llm_matcher_stub, a_refused_connection_is_transient) {
  auto o = options("success");
  o.base_url = "http://127.0.0.1:" + std::to_string(test::unused_port());
  o.base_backoff = 5ms;
  llm_matcher m{engine_, engine_, o};
  auto p = std::make_shared<std::promise<result<std::vector<match_edge>>>>();
  auto f = p->get_future();
  m.decide(document(1, "A"), {document(2, "A")},
           [p](result<std::vector<match_edge>> r) { p->set_value(std::move(r)); });
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  auto r = f.get();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().transient()) << r.error().describe();
  EXPECT_EQ(r.error().code, "llm.connect") << r.error().describe();
  EXPECT_EQ(m.stats().requests, 3u);
  EXPECT_EQ(m.stats().retries, 2u);
}
