// Monthly budgets per tenant, on the running daemon with the LLM stub (every extraction 321 + 54
// tokens, priced here at 1,000 USD per million each way: 0.375 USD a document). A first run
// spends tenant A's budget of 0.30 USD with one document; on the next run:
// - downgrade (filesystem storage): A's documents are read by the local providers and their
//   work items say why, B's (no budget) still go to the LLM, and one BUDGET_EXCEEDED event says
//   so; `ingestd usage` shows the budget spent;
// - hold (the S3 emulator's bucket): A's documents stay queued, unclaimed and with no attempt
//   counted, while B's complete; with a larger budget the next run finishes them with the LLM.
#include <chrono>
#include <csignal>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"
#include "messages/uuid.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/fauxqs/fauxqs_fixture.hpp"
#include "tests/support/llm/chat_stub.hpp"
#include "tests/support/postgres/await.hpp"

using namespace std::chrono_literals;
using namespace ingestd;
using namespace ingestd::test;

namespace {

struct budget_run {
  e2e_setup s;
  chat_stub stub;
  std::string a = uuid::v4().str();
  std::string b = uuid::v4().str();
  std::string model = "success:" + s.db().name();
  std::map<std::string, std::string> env{
      {"INGESTD_EXTRACTION__PROVIDER", "llm"},
      {"INGESTD_EXTRACTION__LLM_BASE_URL", stub.base_url()},
      {"INGESTD_EXTRACTION__LLM_MODEL", model},
      {"INGESTD_USAGE__LLM_INPUT_PRICE_PER_MILLION_TOKENS", "1000"},
      {"INGESTD_USAGE__LLM_OUTPUT_PRICE_PER_MILLION_TOKENS", "1000"}};
  object_writer write;

  /// Runs a daemon with `budgets` over `ids` until `done` ingestions are completed, then stops it.
  void run(const std::vector<std::string>& ids, const std::string& budgets, int64_t done) {
    s.enqueue(ids);
    auto e = env;
    e["INGESTD_USAGE__TENANT_BUDGETS"] = budgets;
    auto d = s.start(e);
    EXPECT_TRUE(await_completed(s, done, 240s)) << s.logs();
    stop(*d);
  }

  static void stop(daemon_process& d) {
    d.signal(SIGTERM);
    auto rc = d.wait_exit(60s);
    ASSERT_TRUE(rc.has_value()) << d.log_tail();
    EXPECT_EQ(*rc, 0) << d.log_tail();
  }

  /// A's first document, read by the LLM: its 0.375 USD spend A's budget of 0.30.
  void spend_a() {
    run(s.add_documents(1, doc_kind::text_pdf, write, a), a + ":0.3", 1);
    EXPECT_EQ(s.db().scalar("SELECT sum(llm_input_tokens) || '/' || sum(llm_output_tokens) FROM "
                            "tenant_usage WHERE tenant_id = $1",
                            {a}),
              "321/54");
  }

  std::string model_of(const std::string& ingestion) {
    return s.db().scalar("SELECT COALESCE(extraction_model, '') FROM ingestion WHERE id = $1",
                         {ingestion});
  }

  int64_t audit(const std::string& ingestion, const std::string& outcome) {
    return s.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND "
                   "step = 'budget' AND outcome = $2",
                   {ingestion, outcome});
  }

  int64_t budget_events(const std::string& action) {
    return s.count("SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
                   "body::jsonb ->> 'type' = 'BUDGET_EXCEEDED' AND ordering_key = $1 AND "
                   "body::jsonb -> 'payload' ->> 'action' = $2",
                   {a, action});
  }
};

} // namespace

TEST(e2e_daemon_budget, a_spent_budget_downgrades_the_tenants_documents_to_the_local_providers) {
  budget_run r;
  ASSERT_NO_FATAL_FAILURE(r.spend_a());
  auto mine = r.s.add_documents(2, doc_kind::text_pdf, {}, r.a);
  auto theirs = r.s.add_documents(1, doc_kind::text_pdf, {}, r.b);
  auto all = mine;
  all.push_back(theirs[0]);
  ASSERT_NO_FATAL_FAILURE(r.run(all, r.a + ":0.3", 4));

  for (auto& id : mine) {
    auto model = r.model_of(id);
    EXPECT_FALSE(model.empty());
    EXPECT_NE(model, r.model) << "A's document went to the LLM";
    EXPECT_EQ(r.audit(id, "downgraded"), 1);
    EXPECT_CONTAINS(r.s.db().scalar("SELECT last_error FROM work_item WHERE id = $1", {id}),
                    "the tenant's monthly budget of 0.30 USD is spent (0.38 USD in ");
  }
  EXPECT_EQ(r.model_of(theirs[0]), r.model) << "B has no budget";
  EXPECT_EQ(r.audit(theirs[0], "downgraded"), 0);
  EXPECT_EQ(r.s.count("SELECT count(*) FROM ingestion WHERE extraction_model = $1", {r.model}), 2);
  EXPECT_EQ(r.budget_events("downgrade"), 1);
  EXPECT_EQ(r.s.count("SELECT count(*) FROM budget_exceeded WHERE tenant_id = $1", {r.a}), 1);

  auto all_env = r.s.daemon_env();
  all_env.insert(r.env.begin(), r.env.end());
  all_env["INGESTD_USAGE__TENANT_BUDGETS"] = r.a + ":0.3";
  std::vector<std::string> env;
  env.reserve(all_env.size());
  for (auto& [k, v] : all_env)
    env.emplace_back(k).append("=").append(v);
  auto usage = run_ingestd({"usage", "--tenant", r.a, "--json"}, env);
  ASSERT_EQ(usage.exit_code, 0) << usage.err;
  EXPECT_CONTAINS(usage.out, "\"budget\":0.3,\"budget_exceeded\":true");
  EXPECT_CONTAINS(usage.out, "\"llm_input_tokens\":321");
}

class e2e_daemon_budget_s3 : public fauxqs_test {};

TEST_F(e2e_daemon_budget_s3, a_held_tenants_documents_wait_queued_until_the_budget_allows) {
  budget_run r;
  std::string bucket;
  auto store = make_bucket(true, &bucket);
  r.env.insert({{"INGESTD_STORAGE__BACKEND", "s3"},
                {"INGESTD_STORAGE__BUCKET", bucket},
                {"INGESTD_STORAGE__PATH_STYLE", "true"},
                {"INGESTD_AWS__ENDPOINT", endpoint_},
                {"INGESTD_AWS__REGION", "us-east-1"},
                {"INGESTD_USAGE__BUDGET_RECHECK_SECONDS", "2"}});
  r.write = [&](const std::string& key, const std::string& bytes, const std::string& type) {
    auto put = test::await<void>([&](auto cb) { store->put(key, bytes, type, cb); });
    if (!put)
      throw std::runtime_error("S3 put " + key + ": " + put.error().describe());
  };
  ASSERT_NO_FATAL_FAILURE(r.spend_a());
  auto mine = r.s.add_documents(2, doc_kind::text_pdf, r.write, r.a);
  auto theirs = r.s.add_documents(1, doc_kind::text_pdf, r.write, r.b);
  auto all = mine;
  all.push_back(theirs[0]);
  r.s.enqueue(all);

  // Held: B's document completes, A's are held (each at least once) and stay queued.
  auto env = r.env;
  env["INGESTD_USAGE__TENANT_BUDGETS"] = r.a + ":0.3:hold";
  auto d = r.s.start(env);
  EXPECT_TRUE(await_completed(r.s, 2, 240s)) << r.s.logs();
  EXPECT_TRUE(wait_until(
      [&] { return r.audit(mine[0], "held") > 0 && r.audit(mine[1], "held") > 0; }, 120s))
      << r.s.logs();
  ASSERT_NO_FATAL_FAILURE(budget_run::stop(*d));
  EXPECT_EQ(r.model_of(theirs[0]), r.model);
  for (auto& id : mine)
    EXPECT_EQ(r.s.db().scalar("SELECT status || ' ' || attempt_count || ' ' || "
                              "(claim_token IS NULL) FROM work_item WHERE id = $1",
                              {id}),
              "in-progress 0 true");
  EXPECT_EQ(r.budget_events("hold"), 1);

  // A larger budget: the held documents go through, read by the LLM.
  ASSERT_NO_FATAL_FAILURE(r.run({}, r.a + ":100:hold", 4));
  for (auto& id : mine)
    EXPECT_EQ(r.model_of(id), r.model);
  EXPECT_EQ(r.budget_events("hold"), 1);
}
