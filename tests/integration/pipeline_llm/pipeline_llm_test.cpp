// The extraction failure modes "in the pipeline and not only in the adapter": a node embedded in a
// real actor system with the ingest stage over postgres_queue, the work and ingest repositories on
// a fresh schema, filesystem_store and the local OCR provider, extracting with the REAL
// openai_extractor over the curl engine against tests/support/llm's chat stub. Each stub behaviour
// is checked by the final state in the database, the requests the stub saw, the queue message and
// the observed outcomes. The quality gate, and the failure notifier as the node's event sink
// through the outbox and the relay.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/db/pg_outbox_repository.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "adapters/extraction/openai_extractor.hpp"
#include "adapters/http/curl_engine.hpp"
#include "adapters/notify/webhook_notifier.hpp"
#include "adapters/ocr/local_transcriber.hpp"
#include "adapters/ocr/thread_pool_executor.hpp"
#include "tests/integration/pipeline_llm/pipeline_harness.hpp"
#include "tests/support/llm/chat_stub.hpp"
#include "tests/support/llm/stub_client.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

struct expectation {
  std::string scenario;
  std::string status;      // final ingestion status
  int attempt_count;       // final attempt_count
  std::string error_class; // "" on success
  std::string code;        // error code in last_error ("" on success)
  int requests;            // chat requests the stub saw in all
  std::chrono::milliseconds request_timeout = 5s;
};

std::ostream& operator<<(std::ostream& os, const expectation& e) {
  return os << e.scenario;
}

std::vector<job_result> results_of(const std::vector<job_outcome>& xs) {
  std::vector<job_result> r;
  r.reserve(xs.size());
  for (const auto& x : xs)
    r.push_back(x.result);
  return r;
}

/// The test stub is shared by all tests (requests are counted per model, which is unique per test).
test::chat_stub* stub = nullptr;

class pipeline_llm_env : public ::testing::Environment {
public:
  void SetUp() override { stub = new test::chat_stub(); }
  void TearDown() override {
    delete stub;
    stub = nullptr;
  }
};

const auto* const env_registered = ::testing::AddGlobalTestEnvironment(new pipeline_llm_env);

class pipeline_llm_base {
protected:
  /// A model name unique to this test: "<scenario>:<schema>".
  std::string model_for(const std::string& scenario) { return scenario + ":" + p.db().name(); }

  void use_llm(const std::string& scenario, std::chrono::milliseconds request_timeout = 5s) {
    openai_options o;
    o.base_url = stub->base_url();
    o.api_key = "sk-pipeline-test";
    o.model = model_for(scenario);
    o.base_backoff = 10ms;
    o.request_timeout = request_timeout;
    o.max_attempts = 3;
    p.ports().extract = std::make_shared<openai_extractor>(
        engine, engine, o); // the engine is the retry timer, as in ingestd run
  }

  int requests_seen(const std::string& scenario) {
    return test::get_count(engine, stub->base_url() + "/count?model=" + model_for(scenario));
  }

  // Declared before the pipeline: the adapters it holds use them until it is gone.
  thread_pool_executor cpu{2};
  curl_engine engine;
  test::pipeline p;

public:
  pipeline_llm_base() { p.ports().ocr = std::make_shared<local_transcriber>(cpu); }
};

class pipeline_llm : public pipeline_llm_base, public ::testing::TestWithParam<expectation> {};

TEST_P(pipeline_llm, ends_in_the_right_state) {
  const auto& e = GetParam();
  use_llm(e.scenario, e.request_timeout);
  bool transient_retries = e.attempt_count > 1;
  // The first back-off is long, so that the test looks at the state between attempts however
  // slow the machine; the test then ends it (release_now) instead of waiting for it.
  p.stage_settings().retry_backoff = {std::chrono::seconds{120}, std::chrono::seconds{1}};
  p.start();
  auto id = p.submit("inv01_en_classic.pdf", "application/pdf");
  if (transient_retries) {
    // After the first failed attempt the message stays, hidden for the queue's back-off.
    ASSERT_TRUE(p.wait_for_outcome(id, [](auto& o) { return o.result == job_result::retrying; }));
    EXPECT_EQ(p.messages_left(), 1);
    EXPECT_EQ(p.messages_hidden_after_first_outcome(id), 1);
    auto s = p.status(id);
    EXPECT_EQ(s.status, "in-progress");
    EXPECT_EQ(s.attempt_count, 1);
    EXPECT_EQ(s.error_class, "transient");
    p.release_now();
  }
  ASSERT_TRUE(p.wait_until_final(id, 90s)) << "no final outcome for " << e.scenario;
  auto s = p.status(id);
  EXPECT_EQ(s.status, e.status);
  EXPECT_EQ(s.attempt_count, e.attempt_count);
  EXPECT_EQ(s.error_class, e.error_class);
  if (e.code.empty())
    EXPECT_EQ(s.last_error, "");
  else
    EXPECT_NE(s.last_error.find(e.code), std::string::npos) << s.last_error;
  EXPECT_EQ(requests_seen(e.scenario), e.requests);
  // Finished either way: the message is deleted (no dead-letter queue configured).
  EXPECT_EQ(p.messages_left(), 0);
  auto results = results_of(p.outcomes(id));
  std::vector<job_result> want;
  for (int i = 1; i < e.attempt_count; ++i)
    want.push_back(job_result::retrying);
  want.push_back(e.status == "completed" ? job_result::completed : job_result::failed);
  EXPECT_EQ(results, want);
  EXPECT_EQ(s.needs_human_review, e.status == "failed");
  if (e.status == "completed") {
    rapidjson::Document d;
    d.Parse(s.document_structured_data.c_str());
    ASSERT_FALSE(d.HasParseError()) << s.document_structured_data;
    EXPECT_STREQ(d["invoice_number"].GetString(), "INV-1"); // the stub's answer, stored
    EXPECT_EQ(
        p.db().scalar("SELECT extraction_input_tokens FROM ingestion WHERE id = $1", {id.str()}),
        "321");
    EXPECT_EQ(p.db().scalar("SELECT extraction_model FROM ingestion WHERE id = $1", {id.str()}),
              model_for(e.scenario));
  }
}

// Transient failures: 3 attempts through the queue, each with 3 in-process requests.
INSTANTIATE_TEST_SUITE_P(
    stub_behaviours, pipeline_llm,
    ::testing::Values(
        expectation{"success", "completed", 0, "", "", 1},
        expectation{"flaky", "completed", 0, "", "", 2},
        expectation{"truncated", "failed", 3, "transient", "llm.truncated", 9},
        expectation{"refusal", "failed", 3, "transient", "llm.refusal", 9},
        expectation{"invalid_json", "failed", 3, "transient", "llm.invalid_json", 9},
        expectation{"schema_invalid", "failed", 3, "transient", "llm.schema_invalid", 9},
        expectation{"rate_limited", "failed", 3, "transient", "llm.rate_limited", 9},
        expectation{"server_error", "failed", 3, "transient", "llm.server_error", 9},
        expectation{"hang", "failed", 3, "transient", "llm.timeout", 9, 300ms},
        expectation{"quota", "failed", 1, "permanent", "llm.insufficient_quota", 1},
        expectation{"context_openai", "failed", 1, "permanent", "llm.context_exceeded", 1},
        expectation{"context_vllm", "failed", 1, "permanent", "llm.context_exceeded", 1},
        expectation{"context_llamacpp", "failed", 1, "permanent", "llm.context_exceeded", 1},
        expectation{"context_llamacpp_500", "failed", 1, "permanent", "llm.context_exceeded", 1},
        expectation{"unauthorized", "failed", 1, "permanent", "llm.unauthorized", 1}),
    [](const auto& info) { return info.param.scenario; });

/// A transcriber that answers fixed text (the corpus invoice with a tampered total).
class fixed_text_transcriber final : public transcriber {
public:
  explicit fixed_text_transcriber(std::string text) : text_(std::move(text)) {}
  void transcribe(transcription_request, callback<transcription> done) override {
    transcription t;
    t.text = text_;
    t.pages.push_back(transcription_page{1, text_, 1.0, {}});
    t.page_count = 1;
    t.quality_score = 1;
    t.native_text = true;
    t.provider = "fixed";
    std::thread{[t = std::move(t), done = std::move(done)]() mutable {
      done(std::move(t));
    }}.detach();
  }
  std::string name() const override { return "fixed"; }

private:
  std::string text_;
};

class pipeline_gate : public pipeline_llm_base, public ::testing::Test {};

/// An extractor that answers one fixed extraction: stands in for an LLM that answered
/// confidently with totals that do not add up (the case the arithmetic check exists for).
class fixed_extractor final : public extractor {
public:
  explicit fixed_extractor(extraction x) : x_(std::move(x)) {}
  void extract(std::string, callback<extraction> done) override {
    std::thread{[x = x_, done = std::move(done)]() mutable { done(std::move(x)); }}.detach();
  }
  std::string name() const override { return "fixed"; }

private:
  extraction x_;
};

std::string tampered_inv01_text() {
  auto text = test::truth_text("inv01");
  auto at = text.find("Total due $3,529.46");
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos)
    text.replace(at, 19, "Total due $3,629.46");
  return text;
}

TEST_F(pipeline_gate, totals_that_do_not_reconcile_end_in_human_review) {
  // The local extractor's reading of the tampered invoice, but marked high confidence as an
  // LLM would: only the arithmetic check can catch it. An incomplete extraction by a
  // non-deterministic extractor is retried once, then goes to a person.
  auto x = local_extractor{}.run(tampered_inv01_text());
  ASSERT_NE(x.structured_data.find("3629.46"), std::string::npos) << x.structured_data;
  x.extraction_successful = true;
  x.confidence = "high";
  x.model = "fixed";
  p.ports().extract = std::make_shared<fixed_extractor>(x);
  p.start();
  auto id = p.submit("inv01_en_classic.pdf", "application/pdf");
  ASSERT_TRUE(p.wait_until_final(id, 60s));
  auto s = p.status(id);
  EXPECT_EQ(s.status, "failed");
  EXPECT_EQ(s.attempt_count, 2);
  EXPECT_EQ(s.error_class, "permanent");
  EXPECT_TRUE(s.needs_human_review);
  EXPECT_NE(s.last_error.find("extraction.gate_failed: extraction incomplete"), std::string::npos)
      << s.last_error;
  EXPECT_NE(s.last_error.find("totals do not reconcile"), std::string::npos) << s.last_error;
  EXPECT_NE(s.last_error.find("3629.46"), std::string::npos) << s.last_error;
  EXPECT_EQ(results_of(p.outcomes(id)),
            (std::vector<job_result>{job_result::retrying, job_result::failed}));
  EXPECT_EQ(p.messages_left(), 0);
  // The extraction is kept for the reviewer.
  EXPECT_NE(s.document_structured_data.find("INV-2024-0117"), std::string::npos)
      << s.document_structured_data;
}

TEST_F(pipeline_gate, the_local_extractor_is_honest_about_totals_that_do_not_reconcile) {
  // Through the real local extractor the same invoice is read with low confidence (it checks the
  // arithmetic itself), so it also ends in human review, for that reason, at the first attempt:
  // the local rules give the same answer every time.
  p.ports().ocr = std::make_shared<fixed_text_transcriber>(tampered_inv01_text());
  p.ports().extract = std::make_shared<local_extractor>();
  p.start();
  auto id = p.submit("inv01_en_classic.pdf", "application/pdf");
  ASSERT_TRUE(p.wait_until_final(id, 60s));
  auto s = p.status(id);
  EXPECT_EQ(s.status, "failed");
  EXPECT_EQ(s.attempt_count, 1);
  EXPECT_EQ(s.error_class, "permanent");
  EXPECT_TRUE(s.needs_human_review);
  EXPECT_NE(s.last_error.find("extraction.gate_failed: extraction incomplete: confidence is low"),
            std::string::npos)
      << s.last_error;
  EXPECT_EQ(results_of(p.outcomes(id)), (std::vector<job_result>{job_result::failed}));
}

// The failure notifier is one of the node's event sinks: the failure events reach it through the
// outbox and the relay, at least once, whatever the webhook does.
class pipeline_notify : public pipeline_llm_base, public ::testing::Test {
protected:
  /// Starts the node with the notifier posting to `url` as its sink for the failure events.
  void start_with_notifier(const std::string& url) {
    webhook_options o;
    // The default timeout (10 s): a shorter one under a loaded machine would post a notice a
    // second time, which the tests count.
    o.url = url;
    notifier_ = std::make_shared<webhook_notifier>(engine, o);
    outbox_ = std::make_shared<pg_outbox_repository>(p.db().url());
    ASSERT_TRUE(test::await<void>([&](auto cb) {
      outbox_->register_sinks({{"notify", failure_event_types()}}, cb);
    }));
    node_options opts;
    opts.outbox = outbox_;
    opts.sinks = {{event_sink_destination("notify"), notifier_}};
    opts.relay.interval = 50ms;
    opts.relay.sink_retry_initial = 50ms;
    opts.relay.sink_retry_max = 200ms;
    use_llm("context_openai");
    p.start(opts);
  }

  /// Runs one permanently failing ingestion; checks the state that must not depend on the webhook.
  uuid run_failing() {
    auto id = p.submit("inv01_en_classic.pdf", "application/pdf");
    EXPECT_TRUE(p.wait_until_final(id, 60s));
    auto s = p.status(id);
    EXPECT_EQ(s.status, "failed");
    EXPECT_EQ(s.attempt_count, 1);
    EXPECT_EQ(s.error_class, "permanent");
    EXPECT_TRUE(s.needs_human_review);
    EXPECT_EQ(p.messages_left(), 0);
    EXPECT_EQ(results_of(p.outcomes(id)), std::vector<job_result>{job_result::failed});
    return id;
  }

  int64_t count(const std::string& sql) { return std::stoll(p.db().scalar(sql)); }

  /// Waits (with a deadline) until `condition` holds.
  static bool eventually(const std::function<bool()>& condition) {
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!condition()) {
      if (std::chrono::steady_clock::now() > deadline)
        return false;
      std::this_thread::sleep_for(20ms); // polling a condition, with a deadline
    }
    return true;
  }

  std::shared_ptr<webhook_notifier> notifier_;
  std::shared_ptr<pg_outbox_repository> outbox_;
};

TEST_F(pipeline_notify, a_failed_ingestion_reaches_the_webhook) {
  auto hook = stub->base_url() + "/webhook/" + p.db().name();
  start_with_notifier(hook);
  auto id = run_failing();
  ASSERT_TRUE(eventually([&] { return test::get_count(engine, hook) >= 1; }));
  ASSERT_TRUE(eventually([&] {
    return count("SELECT count(*) FROM event_outbox WHERE destination = 'events:notify' AND "
                 "sent_at IS NULL")
           == 0;
  }));
  auto got = test::get_sync(engine, hook);
  ASSERT_TRUE(got.ok());
  rapidjson::Document d;
  d.Parse(got->body.c_str());
  ASSERT_FALSE(d.HasParseError()) << got->body;
  EXPECT_EQ(d["count"].GetInt(), 1);
  auto s = p.status(id);
  const auto& last = d["last"];
  EXPECT_STREQ(last["ingestd"]["link"].GetString(),
               ("https://admin.example/documents/" + s.document_id.str()).c_str());
  EXPECT_EQ(std::string{last["ingestd"]["ingestion_id"].GetString()}, id.str());
  EXPECT_EQ(last["ingestd"]["attempts"].GetInt(), 1);
  EXPECT_STREQ(last["ingestd"]["error_class"].GetString(), "permanent");
  EXPECT_NE(std::string{last["text"].GetString()}.find("llm.context_exceeded"), std::string::npos)
      << last["text"].GetString();
  // Only the failure event went to the notifier.
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'events:notify'"), 1);
}

TEST_F(pipeline_notify, a_dead_receiver_changes_nothing_else) {
  start_with_notifier("http://127.0.0.1:" + std::to_string(test::unused_port()) + "/hook");
  run_failing();
  // The notice waits in the outbox, tried again after a back-off.
  ASSERT_TRUE(eventually([&] {
    return count("SELECT COALESCE(max(attempts), 0) FROM event_outbox WHERE destination = "
                 "'events:notify'")
           >= 2;
  }));
  EXPECT_NE(p.db()
                .scalar("SELECT last_error FROM event_outbox WHERE destination = 'events:notify'")
                .find("http.connect"),
            std::string::npos);
  // The node carries on: a second document goes the same way, and its notice waits too.
  auto id2 = p.submit("inv01_en_classic.pdf", "application/pdf");
  ASSERT_TRUE(p.wait_until_final(id2, 60s));
  EXPECT_EQ(p.status(id2).status, "failed");
  EXPECT_EQ(p.messages_left(), 0);
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'events:notify' AND "
                  "sent_at IS NULL"),
            2);
}

} // namespace
