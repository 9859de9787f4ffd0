// pg_usage_repository on a fresh schema (migrations 021, 032): a tenant's month counts the LLM
// tokens and Document AI pages its ingestions record, once each (a transcription recorded again
// adds nothing), and nothing for local reading, one row per statement, tenant and month; the
// budget notice is written once per tenant and month, with one BUDGET_EXCEEDED event.
#include "adapters/db/pg_usage_repository.hpp"
#include "tests/integration/db/work_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::completing;
using ingestd::test::work_test;

namespace {

class usage_test : public work_test {
protected:
  void SetUp() override {
    work_test::SetUp();
    if (!HasFatalFailure())
      usage = std::make_unique<pg_usage_repository>(db->url());
  }
  void TearDown() override {
    usage.reset();
    work_test::TearDown();
  }

  std::unique_ptr<pg_usage_repository> usage;

  month_usage month_of(uuid tenant) {
    auto r = await<month_usage>([&](auto cb) { usage->month_usage_of(tenant, cb); });
    EXPECT_TRUE(r) << r.error().describe();
    return r ? *r : month_usage{};
  }

  /// An ingestion read by `provider` (`pages` pages) and completed with `tokens` in and out.
  void read_one(const std::string& provider, int pages, int64_t tokens) {
    auto id = new_ingestion();
    auto ref = claimed(id);
    transcription_record tr{"ingestions/t/transcription-output.json", "", 0.9, pages, provider};
    for (int i = 0; i < 2; ++i) // recorded twice, as a resumed attempt may
      ASSERT_TRUE(await<void>([&](auto cb) { ingest->record_transcription(ref, tr, cb); }));
    auto c = completing(ref);
    c.record.input_tokens = tokens;
    c.record.output_tokens = tokens / 10;
    ASSERT_TRUE(complete_ingestion(std::move(c)));
  }
};

} // namespace

TEST_F(usage_test, a_tenants_month_counts_its_paid_reading_once_and_local_reading_not_at_all) {
  auto tenant = tenant_of(new_ingestion());
  auto empty = month_of(tenant);
  EXPECT_EQ(empty.month, db->scalar("SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')"));
  EXPECT_EQ(empty.llm_input_tokens + empty.llm_output_tokens + empty.document_ai_pages, 0);

  read_one("document_ai", 3, 1000);
  read_one("tesseract", 5, 0); // local reading: nothing
  read_one("tesseract", 2, 500);
  auto m = month_of(tenant);
  EXPECT_EQ(m.llm_input_tokens, 1500);
  EXPECT_EQ(m.llm_output_tokens, 150);
  EXPECT_EQ(m.document_ai_pages, 3);
  // Appended, never updated: the paid readings' rows only (pages, then tokens, of the first).
  EXPECT_EQ(count("SELECT count(*) FROM tenant_usage"), 3);
  // Another tenant used nothing.
  auto other = month_of(uuid::v4());
  EXPECT_EQ(other.llm_input_tokens + other.document_ai_pages, 0);
}

TEST_F(usage_test, one_statement_appends_a_row_per_tenant_and_month_of_what_it_changed) {
  auto a = new_ingestion(), b = new_ingestion(), c = new_ingestion(), d = new_ingestion();
  auto tenant = tenant_of(a);
  auto elsewhere = uuid::v4();
  db->query("UPDATE document SET tenant_id = $1 WHERE id = $2",
            {elsewhere.str(), document_of(d).str()});
  auto all = "{" + a.str() + "," + b.str() + "," + c.str() + "," + d.str() + "}";
  db->query("UPDATE ingestion SET extraction_input_tokens = 100, extraction_output_tokens = 10, "
            "transcribed_by = 'document_ai', transcribed_pages = 2 WHERE id = ANY($1::uuid[])",
            {all});
  EXPECT_EQ(count("SELECT count(*) FROM tenant_usage"), 2);
  auto m = month_of(tenant);
  EXPECT_EQ(m.llm_input_tokens, 300);
  EXPECT_EQ(m.llm_output_tokens, 30);
  EXPECT_EQ(m.document_ai_pages, 6);
  EXPECT_EQ(month_of(elsewhere).llm_input_tokens, 100);
  // A statement that changes no usage appends nothing.
  db->query("UPDATE ingestion SET extraction_model = 'm' WHERE id = ANY($1::uuid[])", {all});
  EXPECT_EQ(count("SELECT count(*) FROM tenant_usage"), 2);
  // Usage taken back is subtracted, as it was added: by what changed.
  db->query("UPDATE ingestion SET extraction_input_tokens = NULL, transcribed_pages = 1 "
            "WHERE id = $1",
            {b.str()});
  m = month_of(tenant);
  EXPECT_EQ(m.llm_input_tokens, 200);
  EXPECT_EQ(m.llm_output_tokens, 30);
  EXPECT_EQ(m.document_ai_pages, 5);
}

TEST_F(usage_test, a_budget_notice_is_written_once_per_tenant_and_month_with_its_event) {
  auto tenant = uuid::v4();
  budget_notice n{tenant, "2026-11", 12.5, 10, "EUR", "hold"};
  auto notice = [&](budget_notice x) {
    auto r = await<bool>([&](auto cb) { usage->budget_exceeded(std::move(x), cb); });
    EXPECT_TRUE(r) << r.error().describe();
    return r && *r;
  };
  EXPECT_TRUE(notice(n));
  EXPECT_FALSE(notice(n)) << "another node's notice of the same month";
  n.month = "2026-12";
  EXPECT_TRUE(notice(n));
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
                  "body::jsonb ->> 'type' = 'BUDGET_EXCEEDED' AND ordering_key = $1",
                  {tenant.str()}),
            2);
  EXPECT_EQ(db->scalar("SELECT body::jsonb -> 'payload' ->> 'spent' || ' ' || "
                       "(body::jsonb -> 'payload' ->> 'currency') || ' ' || "
                       "(body::jsonb ->> 'tenant_id') FROM event_outbox WHERE destination = "
                       "'events' AND body::jsonb -> 'payload' ->> 'month' = '2026-11'"),
            "12.5 EUR " + tenant.str());
}
