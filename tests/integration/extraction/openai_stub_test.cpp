// openai_extractor over the real curl engine against the local chat-completions stub: every
// answer the servers send ends in the right classification, with the right number of requests
// counted at the stub.
#include <atomic>
#include <future>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/extraction/openai_extractor.hpp"
#include "adapters/http/curl_engine.hpp"
#include "adapters/support/log.hpp"
#include "tests/support/llm/chat_stub.hpp"
#include "tests/support/llm/stub_client.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

struct outcome {
  result<extraction> value = error{};
  int requests = 0;
  std::chrono::milliseconds elapsed{0};
};

class openai_stub : public ::testing::Test {
protected:
  static void SetUpTestSuite() { stub_ = new test::chat_stub(); }
  static void TearDownTestSuite() {
    delete stub_;
    stub_ = nullptr;
  }

  /// Runs one extraction with model "<scenario>:<test name>" and counts the stub's requests.
  outcome run(const std::string& scenario, std::chrono::milliseconds timeout = 5s) {
    std::string model
        = scenario + ":" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    openai_options o;
    o.base_url = stub_->base_url();
    o.api_key = "sk-stub-key-0001";
    o.model = model;
    o.base_backoff = 10ms;
    o.request_timeout = timeout;
    openai_extractor ex{engine_, engine_, o};
    auto p = std::make_shared<std::promise<result<extraction>>>();
    auto f = p->get_future();
    auto calls = std::make_shared<std::atomic<int>>(0);
    auto start = std::chrono::steady_clock::now();
    ex.extract("Invoice INV-1, total 119.00 EUR", [p, calls](result<extraction> r) {
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
  }

  static test::chat_stub* stub_;
  curl_engine engine_; // also the retry timer, as in ingestd run
};

test::chat_stub* openai_stub::stub_ = nullptr;

} // namespace

TEST_F(openai_stub, success_with_tokens_and_bearer_key) {
  auto o = run("success");
  ASSERT_TRUE(o.value.ok()) << o.value.error().describe();
  EXPECT_EQ(o.requests, 1);
  EXPECT_EQ(o.value->input_tokens, 321);
  EXPECT_EQ(o.value->output_tokens, 54);
  EXPECT_EQ(o.value->model, "success:success_with_tokens_and_bearer_key");
  EXPECT_EQ(o.value->confidence, "high");
  auto auth = test::get_sync(
      engine_, stub_->base_url() + "/last_auth?model=success:success_with_tokens_and_bearer_key");
  ASSERT_TRUE(auth.ok());
  EXPECT_NE(auth->body.find("Bearer sk-stub-key-0001"), std::string::npos);
}

TEST_F(openai_stub, broken_answers_are_retried_then_transient) {
  expect_failure("truncated", "llm.truncated", error_class::transient, 3);
  expect_failure("refusal", "llm.refusal", error_class::transient, 3);
  expect_failure("invalid_json", "llm.invalid_json", error_class::transient, 3);
  expect_failure("schema_invalid", "llm.schema_invalid", error_class::transient, 3);
}

TEST_F(openai_stub, rate_limits_are_retried_honouring_retry_after) {
  expect_failure("rate_limited", "llm.rate_limited", error_class::transient, 3);
  // Retry-After: 1 (seconds) twice: at least two seconds in all, though base_backoff is 10 ms.
  auto o = run("rate_limited_seconds");
  ASSERT_FALSE(o.value.ok());
  EXPECT_EQ(o.requests, 3);
  EXPECT_GE(o.elapsed, 2000ms);
  // A wait beyond the cap goes to the queue at once, with the server's wait attached.
  auto l = run("rate_limited_long");
  ASSERT_FALSE(l.value.ok());
  EXPECT_EQ(l.requests, 1);
  EXPECT_TRUE(l.value.error().transient());
  EXPECT_EQ(l.value.error().retry_after_ms, 600'000);
}

TEST_F(openai_stub, server_errors_are_retried_and_recover) {
  expect_failure("server_error", "llm.server_error", error_class::transient, 3);
  auto o = run("flaky");
  ASSERT_TRUE(o.value.ok()) << o.value.error().describe();
  EXPECT_EQ(o.requests, 2);
  EXPECT_EQ(o.value->input_tokens, 321); // the failed attempt reported no usage
}

TEST_F(openai_stub, permanent_errors_are_not_retried) {
  expect_failure("quota", "llm.insufficient_quota", error_class::permanent, 1);
  expect_failure("context_openai", "llm.context_exceeded", error_class::permanent, 1);
  expect_failure("context_vllm", "llm.context_exceeded", error_class::permanent, 1);
  expect_failure("context_llamacpp", "llm.context_exceeded", error_class::permanent, 1);
  expect_failure("context_llamacpp_500", "llm.context_exceeded", error_class::permanent, 1);
  expect_failure("unauthorized", "llm.unauthorized", error_class::permanent, 1);
}

TEST_F(openai_stub, a_hanging_server_times_out_three_times) {
  expect_failure("hang", "llm.timeout", error_class::transient, 3, 300ms);
}

TEST_F(openai_stub, a_dead_server_is_a_transient_connect_error) {
  openai_options o;
  o.base_url = "http://127.0.0.1:" + std::to_string(test::unused_port());
  o.base_backoff = 5ms;
  openai_extractor ex{engine_, engine_, o};
  auto p = std::make_shared<std::promise<result<extraction>>>();
  auto f = p->get_future();
  ex.extract("x", [p](result<extraction> r) { p->set_value(std::move(r)); });
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  auto r = f.get();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().transient()) << r.error().describe();
  EXPECT_EQ(r.error().code, "llm.connect") << r.error().describe();
  EXPECT_EQ(ex.stats().requests, 3u);
  EXPECT_EQ(ex.stats().retries, 2u);
}

// The lines the LLM client writes about a call carry the caller's log fields (a job's node,
// stage, step, ingestion, document and tenant), beside their own.
TEST_F(openai_stub, retry_and_failure_lines_carry_the_callers_log_fields) {
  log::setup("json", "info");
  log::capture captured;
  openai_options o;
  o.base_url = stub_->base_url();
  o.model = "server_error:log-fields";
  o.base_backoff = 10ms;
  openai_extractor ex{engine_, engine_, o};
  call_context context;
  context.log_fields = std::make_shared<const std::vector<context_field>>(
      std::vector<context_field>{{"worker_id", "node-1"},
                                 {"stage", "ingest"},
                                 {"step", "extract"},
                                 {"ingestion_id", "0190a1b2-0000-7000-8000-000000000001"},
                                 {"document_id", "0190a1b2-0000-7000-8000-0000000000d0"},
                                 {"tenant_id", "tenant-9"},
                                 {"attempt", "2", true}});
  auto p = std::make_shared<std::promise<result<extraction>>>();
  ex.extract_with("Invoice INV-1", context,
                  [p](result<extraction> r) { p->set_value(std::move(r)); });
  auto f = p->get_future();
  ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
  EXPECT_FALSE(f.get());
  auto lines = captured.lines();
  log::setup("text", "info");
  ASSERT_EQ(lines.size(), 3u) << "two retries and the failure";
  for (auto& line : lines) {
    rapidjson::Document d;
    d.Parse(line.c_str());
    ASSERT_FALSE(d.HasParseError()) << line;
    ASSERT_TRUE(d.IsObject()) << line;
    EXPECT_STREQ(d["worker_id"].GetString(), "node-1") << line;
    EXPECT_STREQ(d["stage"].GetString(), "ingest") << line;
    EXPECT_STREQ(d["step"].GetString(), "extract") << line;
    EXPECT_STREQ(d["ingestion_id"].GetString(), "0190a1b2-0000-7000-8000-000000000001") << line;
    EXPECT_STREQ(d["document_id"].GetString(), "0190a1b2-0000-7000-8000-0000000000d0") << line;
    EXPECT_STREQ(d["tenant_id"].GetString(), "tenant-9") << line;
    ASSERT_TRUE(d["attempt"].IsInt()) << line;
    EXPECT_EQ(d["attempt"].GetInt(), 2) << "the job's attempt, written as a number: " << line;
  }
}
