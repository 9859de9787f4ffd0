// The ingest job's providers, on the deterministic scheduler with the port fakes:
// - those a reprocess chose for its ingestion (migration 013): the node's transcriber and
//   extractor of those names run instead of the configured ones, the audit trail names them, and
//   a choice the node does not run fails the ingestion for review at once, naming the provider
//   and what it needs;
// - the tenants' monthly budgets: a tenant whose month is spent has its document read by the
//   local providers (and its work item says so), or the work is given back to wait, with no
//   attempt counted; the budget is asked only when a paid provider would read the document;
// - calibrated confidence (review.auto_approve): a document the gate passed goes through only when
//   the tenant's reviewers kept enough of each field's values at the extractor's confidence, else
//   it is completed for review with the field that fell short; a failed read fails the attempt;
// - learning from corrections (review.learn): what reviewers taught about the supplier corrects
//   the extraction before the gate, and the audit trail says what and from how many reviews.
#define CAF_SUITE job_providers
#include "caf/test/dsl.hpp"

#include "adapters/extraction/calibration.hpp"
#include "adapters/extraction/supplier_knowledge.hpp"
#include "adapters/providers/budget_ledger.hpp"
#include "tests/actors/support/actor_fixture.hpp"

using namespace ingestd;

namespace {

/// The budgets' database: a settable month of use; counts its reads and the notices.
class fake_usage : public usage_repository {
public:
  month_usage use{"2026-11", 0, 0, 0};
  int reads = 0;
  std::vector<budget_notice> notices;

  void month_usage_of(uuid, callback<month_usage> done) override {
    ++reads;
    done(use);
  }
  void budget_exceeded(budget_notice notice, callback<bool> done) override {
    notices.push_back(std::move(notice));
    done(notices.size() == 1);
  }
};

/// What reviewers taught: settable reviews and supplier facts of every tenant, or an error;
/// counts its reads.
class fake_reviews : public learning_repository {
public:
  result<std::vector<field_reviews>> answer = std::vector<field_reviews>{};
  int reads = 0;
  void reviews_of(uuid, callback<std::vector<field_reviews>> done) override {
    ++reads;
    done(answer);
  }
  /// What reviewers taught about suppliers, or an error.
  result<std::vector<supplier_fact>> facts = std::vector<supplier_fact>{};
  int fact_reads = 0;
  void facts_of(uuid, callback<std::vector<supplier_fact>> done) override {
    ++fact_reads;
    done(facts);
  }
};

struct job_providers_fixture : test::actor_fixture {
  heartbeat_actor hb = heartbeat();
  /// The node's other providers; the fixture's `ocr` and `extract` are the configured ones.
  std::shared_ptr<test::fake_transcriber> document_ai
      = std::make_shared<test::fake_transcriber>("document_ai");
  std::shared_ptr<test::fake_extractor> llm = std::make_shared<test::fake_extractor>("llm");

  job_providers_fixture() {
    ports->transcribers = {{"tesseract", ocr}, {"document_ai", document_ai}};
    ports->extractors = {{"local", extract}, {"llm", llm}};
    llm->next_result.model = "chosen-model";
  }

  /// One tenant's documents.
  uuid tenant = uuid::v7();

  uuid add_document() {
    auto id = db->add("documents/d.txt", "text/plain", 0, "ingest", tenant);
    store->set("documents/d.txt", "Invoice INV-1 total 119.00");
    return id;
  }

  /// The detail of the ingestion's only audit event of `step` ("" when there is none, "<n
  /// events>" when several).
  std::string detail_of(const uuid& id, const std::string& step) {
    std::vector<std::string> found;
    for (auto& row : audit_of(id, step))
      found.push_back(row.event.outcome + ": " + row.event.detail);
    if (found.size() > 1)
      return "<" + std::to_string(found.size()) + " events>";
    return found.empty() ? std::string{} : found.front();
  }

  static bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  }

  std::shared_ptr<fake_usage> usage = std::make_shared<fake_usage>();
  std::chrono::steady_clock::time_point now{std::chrono::hours{1}};

  /// Every tenant's budget: 1.00 USD a month with `action`; LLM input at 1,000 USD per million
  /// tokens; the budget asked again after 60 s.
  void budgets(const std::string& action) {
    config cfg;
    cfg.usage.llm_input_price_per_million_tokens = 1000;
    cfg.usage.currency = "USD";
    cfg.usage.monthly_budget = 1.0;
    cfg.usage.budget_action = action;
    cfg.usage.budget_recheck_seconds = 60;
    ports->budget = budget_ledger::make(
        cfg, [this] { return usage; }, [this] { return now; });
  }

  std::shared_ptr<fake_reviews> reviews = std::make_shared<fake_reviews>();

  /// The fixture's tenant needs 0.95 of each field's values kept over at least 20 reviews.
  void auto_approve() {
    confidence_calibration::settings s;
    s.tenants[tenant] = 0.95;
    s.min_reviews = 20;
    ports->calibration = confidence_calibration::make(s, reviews, [this] { return now; });
  }

  /// Every field of the fake extractor's invoice reviewed 40 times at "high", the total kept
  /// `total_kept` times.
  void reviewed(int64_t total_kept) {
    std::vector<field_reviews> all;
    for (auto f : {"invoice_number", "invoice_date", "supplier_name", "currency", "subtotal",
                   "vat_amount", "total"})
      all.push_back({"high", f, 40, std::string_view{f} == "total" ? total_kept : 40});
    reviews->answer = all;
  }

  /// A document whose reprocess chose the paid providers.
  uuid add_paid_document() {
    auto id = add_document();
    db->choose_providers(id, "document_ai", "llm");
    return id;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(job_providers_tests, job_providers_fixture)

CAF_TEST(an ingestion without a choice runs with the configured providers) {
  auto id = add_document();
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(ocr->calls(), 1);
  CAF_CHECK_EQUAL(extract->calls(), 1);
  CAF_CHECK_EQUAL(document_ai->calls(), 0);
  CAF_CHECK_EQUAL(llm->calls(), 0);
  CAF_CHECK_EQUAL(detail_of(id, "providers"), "");
  CAF_CHECK(contains(detail_of(id, "transcribe"), "ok: fake, quality"));
  CAF_CHECK(contains(detail_of(id, "extract"), "ok: fake, confidence high, model fake"));
}

CAF_TEST(the chosen transcriber and extractor run instead of the configured ones) {
  auto id = add_document();
  db->choose_providers(id, "document_ai", "llm");
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(document_ai->calls(), 1);
  CAF_CHECK_EQUAL(llm->calls(), 1);
  CAF_CHECK_EQUAL(ocr->calls(), 0);
  CAF_CHECK_EQUAL(extract->calls(), 0);
  CAF_CHECK_EQUAL(work->item(id).status, "completed");
  // The audit trail names the providers chosen and the ones that did the work.
  CAF_CHECK_EQUAL(detail_of(id, "providers"), "chosen: transcription document_ai, extraction llm");
  CAF_CHECK(contains(detail_of(id, "transcribe"), "ok: document_ai, quality"));
  CAF_CHECK(contains(detail_of(id, "extract"), "ok: llm, confidence high, model chosen-model"));
  check_no_violations();
}

CAF_TEST(a choice of one provider keeps the configured other) {
  auto id = add_document();
  db->choose_providers(id, "", "llm");
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(ocr->calls(), 1);
  CAF_CHECK_EQUAL(document_ai->calls(), 0);
  CAF_CHECK_EQUAL(llm->calls(), 1);
  CAF_CHECK_EQUAL(extract->calls(), 0);
  CAF_CHECK_EQUAL(detail_of(id, "providers"),
                  "chosen: transcription as configured (fake), extraction llm");
}

CAF_TEST(the chosen extractor decides whether a gate refusal is worth a retry) {
  // A refusal a second answer could change: retried once for an LLM, final for the local rules.
  ports->gate = [](const extraction&) {
    return gate_verdict{false, "totals do not reconcile", false};
  };
  // Configured: the local rules (deterministic); chosen: the LLM.
  extract->deterministic_answers = true;
  auto by_llm = add_document();
  db->choose_providers(by_llm, "", "llm");
  CAF_CHECK_EQUAL(run_job(by_llm.str(), hb).result, job_result::retrying);
  CAF_CHECK_EQUAL(work->item(by_llm).status, "in-progress");
  // Configured: an LLM; chosen: the local rules.
  extract->deterministic_answers = false;
  auto local = std::make_shared<test::fake_extractor>("local");
  local->deterministic_answers = true;
  ports->extractors["local"] = local;
  auto by_rules = add_document();
  db->choose_providers(by_rules, "", "local");
  CAF_CHECK_EQUAL(run_job(by_rules.str(), hb).result, job_result::failed);
  CAF_CHECK_EQUAL(work->item(by_rules).attempt_count, 1);
  CAF_CHECK_EQUAL(local->calls(), 1);
}

CAF_TEST(a chosen transcriber the node does not run fails the ingestion for review at once) {
  ports->transcribers.erase("document_ai");
  auto id = add_document();
  db->choose_providers(id, "document_ai", "");
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  auto row = work->item(id);
  CAF_CHECK_EQUAL(row.status, "failed");
  CAF_CHECK_EQUAL(row.error_class, "permanent");
  CAF_CHECK_EQUAL(row.attempt_count, 1);
  CAF_CHECK(contains(row.last_error, "provider.unavailable"));
  CAF_CHECK(
      contains(row.last_error, "transcription provider document_ai, which this node does not run"));
  CAF_CHECK(
      contains(row.last_error, "transcription.document_ai_endpoint and INGESTD_DOCUMENT_AI_TOKEN"));
  CAF_CHECK(contains(detail_of(id, "providers"), "permanent: provider.unavailable"));
  // Nothing else ran: no fetch, no transcription, no extraction; the message is acknowledged and
  // the failure event (which the failure notifier takes) written as for any final one.
  CAF_CHECK_EQUAL(detail_of(id, "fetch"), "");
  CAF_CHECK_EQUAL(ocr->calls() + document_ai->calls() + extract->calls() + llm->calls(), 0);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(status_events(id, "INGESTION_FAILED"), 1u);
  check_no_violations();
}

CAF_TEST(a chosen extractor the node does not run names the configuration it needs) {
  ports->extractors.erase("llm");
  auto id = add_document();
  db->choose_providers(id, "document_ai", "llm");
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::failed);
  auto row = work->item(id);
  CAF_CHECK(contains(row.last_error, "extraction provider llm, which this node does not run"));
  CAF_CHECK(contains(row.last_error, "extraction.llm_base_url"));
  CAF_CHECK(contains(row.last_error, "INGESTD_LLM_API_KEY"));
  CAF_CHECK_EQUAL(document_ai->calls(), 0);
}

CAF_TEST(a tenant within its budget has its document read by the paid providers) {
  budgets("downgrade");
  usage->use.llm_input_tokens = 999; // 0.999 USD of 1.00
  auto id = add_paid_document();
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(document_ai->calls(), 1);
  CAF_CHECK_EQUAL(llm->calls(), 1);
  CAF_CHECK_EQUAL(detail_of(id, "budget"), "ok: ");
  CAF_CHECK_EQUAL(work->item(id).last_error, "");
  // A second document within the recheck reuses the figure; after it, the figure is read again.
  CAF_CHECK_EQUAL(run_job(add_paid_document().str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(usage->reads, 1);
  now += std::chrono::seconds{61};
  CAF_CHECK_EQUAL(run_job(add_paid_document().str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(usage->reads, 2);
  CAF_CHECK(usage->notices.empty());
}

CAF_TEST(a tenant whose budget is spent has its document read by the local providers) {
  budgets("downgrade");
  usage->use.llm_input_tokens = 1000; // 1.00 USD of 1.00
  auto id = add_paid_document();
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(document_ai->calls() + llm->calls(), 0);
  CAF_CHECK_EQUAL(ocr->calls(), 1);
  CAF_CHECK_EQUAL(extract->calls(), 1);
  auto said = "the tenant's monthly budget of 1.00 USD is spent (1.00 USD in 2026-11): read with "
              "the local providers";
  CAF_CHECK_EQUAL(detail_of(id, "budget"), std::string{"downgraded: "} + said);
  CAF_CHECK_EQUAL(work->item(id).status, "completed");
  CAF_CHECK_EQUAL(work->item(id).last_error, said);
  // The notice once per month, whatever the documents.
  CAF_CHECK_EQUAL(run_job(add_paid_document().str(), hb).result, job_result::completed);
  CAF_REQUIRE_EQUAL(usage->notices.size(), 1u);
  CAF_CHECK_EQUAL(usage->notices[0].month, "2026-11");
  CAF_CHECK_EQUAL(usage->notices[0].action, "downgrade");
  CAF_CHECK_EQUAL(usage->notices[0].budget, 1.0);
  check_no_violations();
}

CAF_TEST(the work of a held tenant is given back to wait without counting an attempt) {
  budgets("hold");
  usage->use.llm_input_tokens = 5000;
  auto id = add_paid_document();
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::released);
  CAF_CHECK_EQUAL(document_ai->calls() + llm->calls() + ocr->calls() + extract->calls(), 0);
  auto row = work->item(id);
  CAF_CHECK_EQUAL(row.status, "in-progress");
  CAF_CHECK_EQUAL(row.attempt_count, 0);
  CAF_CHECK_EQUAL(row.releases, 1);
  CAF_CHECK(!row.token);
  // The message waits out the recheck before it is received again.
  auto changes = queue->visibility_calls();
  CAF_REQUIRE(!changes.empty());
  CAF_CHECK_EQUAL(changes.back().timeout.count(), 60);
  CAF_CHECK(contains(detail_of(id, "budget"), "held: the tenant's monthly budget of 1.00 USD"));
  CAF_CHECK_EQUAL(usage->notices.size(), 1u);
  CAF_CHECK_EQUAL(usage->notices[0].action, "hold");
  // Once the budget allows (a new month: nothing used), the same work goes through.
  usage->use = month_usage{"2026-12", 0, 0, 0};
  now += std::chrono::seconds{60};
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(llm->calls(), 1);
  check_no_violations();
}

CAF_TEST(the budget is not asked when only the local providers would read the document) {
  budgets("hold");
  usage->use.llm_input_tokens = 5000;
  auto id = add_document();
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(usage->reads, 0);
  CAF_CHECK_EQUAL(detail_of(id, "budget"), "");
}

CAF_TEST(a document whose fields reviewers kept often enough goes through) {
  auto_approve();
  reviewed(39);
  auto id = add_document();
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(db->row(id).review_reason, "");
  CAF_CHECK_EQUAL(work->item(id).last_error, "");
  CAF_CHECK_EQUAL(detail_of(id, "calibration"), "through: ");
  CAF_CHECK_EQUAL(reviews->reads, 1);
  check_no_violations();
}

CAF_TEST(a field reviewers corrected too often sends the document to review) {
  auto_approve();
  reviewed(36); // 0.90 of 40
  auto id = add_document();
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  auto said = "calibration: total at confidence high kept in 36 of 40 reviews (0.90 < "
              "review.auto_approve 0.95)";
  CAF_CHECK_EQUAL(db->row(id).review_reason, said);
  CAF_CHECK_EQUAL(work->item(id).last_error, said);
  CAF_CHECK_EQUAL(detail_of(id, "calibration"), std::string{"review: "} + said);
  // Too few reviews, and another tenant without a threshold (not asked).
  reviews->answer = std::vector<field_reviews>{};
  now += std::chrono::seconds{300};
  auto few = add_document();
  CAF_CHECK_EQUAL(run_job(few.str(), hb).result, job_result::completed);
  CAF_CHECK(contains(db->row(few).review_reason, "has 0 reviews, fewer than"));
  tenant = uuid::v7();
  auto other = add_document();
  CAF_CHECK_EQUAL(run_job(other.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(db->row(other).review_reason, "");
  CAF_CHECK_EQUAL(detail_of(other, "calibration"), "");
  CAF_CHECK_EQUAL(reviews->reads, 2);
  check_no_violations();
}

CAF_TEST(reviews that cannot be read fail the attempt for a retry) {
  auto_approve();
  reviews->answer = error::make_transient("db.unavailable", "the database went away");
  auto id = add_document();
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::retrying);
  auto row = work->item(id);
  CAF_CHECK_EQUAL(row.status, "in-progress");
  CAF_CHECK(contains(row.last_error, "the database went away"));
  // The next attempt reads again and goes through.
  reviewed(40);
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(work->item(id).status, "completed");
  CAF_CHECK_EQUAL(reviews->reads, 2);
}

CAF_TEST(what reviewers taught about the supplier corrects the extraction before the gate) {
  ports->knowledge = std::make_shared<const tenant_cache<std::vector<supplier_fact>>>(
      std::chrono::seconds{300},
      [this](const uuid& t, callback<std::vector<supplier_fact>> done) {
        reviews->facts_of(t, std::move(done));
      },
      [this] { return now; });
  // The fake extractor reads "ACME GmbH" and no VAT id.
  reviews->facts
      = std::vector<supplier_fact>{{"name:acmegmbh", "supplier_vat_id", "DE123456789", 2},
                                   {"name:other", "supplier_name", "Other AG", 1}};
  auto id = add_document();
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  CAF_CHECK(contains(db->row(id).structured_data, R"("supplier_vat_id":"DE123456789")"));
  CAF_CHECK(contains(db->row(id).structured_data, R"("supplier_name":"ACME GmbH")"));
  CAF_CHECK_EQUAL(detail_of(id, "learned"),
                  "applied: supplier_vat_id 'DE123456789' (learned from 2 reviews)");
  // Nothing about this supplier: the extraction as it was, read from the node's copy.
  reviews->facts = std::vector<supplier_fact>{};
  auto same = add_document();
  CAF_CHECK_EQUAL(run_job(same.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(reviews->fact_reads, 1);
  now += std::chrono::seconds{300};
  auto later = add_document();
  CAF_CHECK_EQUAL(run_job(later.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(reviews->fact_reads, 2);
  CAF_CHECK_EQUAL(detail_of(later, "learned"), "none: ");
  CAF_CHECK(contains(db->row(later).structured_data, R"("supplier_vat_id":null)"));
  check_no_violations();
}

CAF_TEST_FIXTURE_SCOPE_END()
