// The quality gate: success, confidence and critical fields plus arithmetic, with reasons that
// name the failed check.
#include <gtest/gtest.h>

#include "adapters/extraction/quality_gate.hpp"

using namespace ingestd;

namespace {

extraction make(std::string json, bool ok = true, std::string confidence = "high") {
  extraction x;
  x.structured_data = std::move(json);
  x.extraction_successful = ok;
  x.confidence = std::move(confidence);
  return x;
}

const char* reconciled = R"({"subtotal":100.0,"vat_amount":19.0,"total":119.0,
  "line_items":[{"description":"a","quantity":1,"unit_price":60,"amount":60.0},
                {"description":"b","quantity":1,"unit_price":40,"amount":40.0}]})";

} // namespace

TEST(quality_gate, passes_a_reconciled_invoice) {
  auto v = evaluate(make(reconciled));
  EXPECT_TRUE(v.passed) << v.reason;
  EXPECT_TRUE(v.reason.empty());
  EXPECT_TRUE(evaluate(make(reconciled, true, "medium")).passed);
}

TEST(quality_gate, totals_that_do_not_reconcile_fail_with_the_reason) {
  auto v = evaluate(make(R"({"subtotal":100.0,"vat_amount":19.0,"total":120.0,"line_items":[]})"));
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.reason, "totals do not reconcile: subtotal 100.00 + vat 19.00 != total 120.00");
  // Without invoice number, date and supplier: critical fields missing, review at once.
  EXPECT_TRUE(v.critical_fields_missing);
  auto e = gate_error(v, true);
  EXPECT_TRUE(e.permanent());
  EXPECT_EQ(e.code, "extraction.gate_failed");
  EXPECT_EQ(e.message, "critical fields missing: " + v.reason);
}

// The outcomes: incomplete → retry once where a retry can change the answer (the
// caller says), then human review; critical fields missing → human review at once.
TEST(quality_gate, an_incomplete_extraction_is_retried_only_where_a_retry_can_help) {
  auto v = evaluate(
      make(R"({"invoice_number":"A-1","invoice_date":"2024-03-01","supplier_name":"Acme",)"
           R"("subtotal":100.0,"vat_amount":19.0,"total":120.0,"line_items":[]})"));
  ASSERT_FALSE(v.passed);
  EXPECT_FALSE(v.critical_fields_missing);
  auto retry = gate_error(v, true);
  EXPECT_TRUE(retry.transient());
  EXPECT_EQ(retry.message, v.reason);
  auto final_verdict = gate_error(v, false);
  EXPECT_TRUE(final_verdict.permanent());
  EXPECT_EQ(final_verdict.message, "extraction incomplete: " + v.reason);
}

TEST(quality_gate, a_missing_critical_field_named_by_the_extractor_is_critical) {
  auto x = make(
      R"({"invoice_number":"A-1","invoice_date":"2024-03-01","supplier_name":"Acme","total":null})",
      false);
  x.missing_fields = {"total"};
  auto v = evaluate(x);
  ASSERT_FALSE(v.passed);
  EXPECT_TRUE(v.critical_fields_missing);
  EXPECT_TRUE(gate_error(v, true).permanent());
  // Unreadable output is no evidence of a non-standard document: a retry may read it.
  auto garbage = evaluate(make("not json"));
  ASSERT_FALSE(garbage.passed);
  EXPECT_FALSE(garbage.critical_fields_missing);
}

TEST(quality_gate, rounding_is_tolerated) {
  EXPECT_TRUE(evaluate(make(R"({"subtotal":33.33,"vat_amount":6.33,"total":39.67})")).passed);
  EXPECT_FALSE(evaluate(make(R"({"subtotal":33.33,"vat_amount":6.33,"total":39.70})")).passed);
}

TEST(quality_gate, line_items_must_sum_to_the_subtotal) {
  auto v = evaluate(make(R"({"subtotal":100.0,"vat_amount":19.0,"total":119.0,
    "line_items":[{"description":"a","quantity":1,"unit_price":60,"amount":60.0},
                  {"description":"b","quantity":1,"unit_price":30,"amount":30.0}]})"));
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.reason,
            "line items do not reconcile: 2 line amounts sum to 90.00 != subtotal 100.00");
}

TEST(quality_gate, without_subtotal_and_vat_lines_sum_to_the_total) {
  EXPECT_TRUE(evaluate(make(R"({"subtotal":null,"vat_amount":null,"total":100.0,
    "line_items":[{"description":"a","quantity":1,"unit_price":100,"amount":100.0}]})"))
                  .passed);
  EXPECT_FALSE(evaluate(make(R"({"subtotal":null,"vat_amount":null,"total":100.0,
    "line_items":[{"description":"a","quantity":1,"unit_price":90,"amount":90.0}]})"))
                   .passed);
}

TEST(quality_gate, seed_criteria) {
  auto low = evaluate(make(reconciled, true, "low"));
  EXPECT_FALSE(low.passed);
  EXPECT_EQ(low.reason, "confidence is low");
  auto failed = make(reconciled, false, "low");
  failed.missing_fields = {"total", "invoice_number"};
  auto v = evaluate(failed);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.reason, "extraction not successful (missing: total, invoice_number)");
  gate_options lenient;
  lenient.accept_low_confidence = true;
  EXPECT_TRUE(evaluate(make(reconciled, true, "low"), lenient).passed);
}

TEST(quality_gate, missing_figures_skip_their_check_and_garbage_fails) {
  EXPECT_TRUE(evaluate(make(R"({"subtotal":null,"vat_amount":null,"total":119.0})")).passed);
  EXPECT_FALSE(evaluate(make("not json")).passed);
  EXPECT_EQ(evaluate(make("not json")).reason, "structured data is not a JSON object");
}

// --- plausibility checks: each names itself in the reason ---------------------------------------

namespace {

gate_options on(const char* today = "2026-06-01") {
  gate_options o;
  o.today = today;
  return o;
}

std::string reason_of(const std::string& json) {
  return evaluate(make(json), on()).reason;
}

bool names(const std::string& reason, const char* check) {
  return reason.find(std::string{"plausibility check "} + check + " failed") == 0;
}

} // namespace

TEST(quality_gate_plausibility, a_negative_subtotal_that_sums_to_the_total_fails) {
  // A reported extraction: the sums reconcile, the figures are nonsense.
  auto r = reason_of(R"({"subtotal":-29670868687.0,"vat_amount":29670869006.0,"total":319.0})");
  EXPECT_TRUE(names(r, gate_check::negative_amount)) << r;
  EXPECT_NE(r.find("subtotal -29670868687.00"), std::string::npos) << r;
}

TEST(quality_gate_plausibility, a_credit_note_with_every_figure_negative_passes) {
  auto v = evaluate(make(R"({"subtotal":-100.0,"vat_amount":-19.0,"total":-119.0})"), on());
  EXPECT_TRUE(v.passed) << v.reason;
  EXPECT_TRUE(names(reason_of(R"({"subtotal":100.0,"vat_amount":-19.0,"total":81.0})"),
                    gate_check::negative_amount));
}

TEST(quality_gate_plausibility, vat_more_than_the_total_fails) {
  auto r = reason_of(R"({"subtotal":null,"vat_amount":150.0,"total":100.0})");
  EXPECT_TRUE(names(r, gate_check::vat_exceeds_total)) << r;
}

TEST(quality_gate_plausibility, vat_rates_that_exist_pass_others_fail) {
  for (const char* ok : {R"({"subtotal":100.0,"vat_amount":0.0,"total":100.0})",
                         R"({"subtotal":100.0,"vat_amount":27.0,"total":127.0})",
                         R"({"subtotal":0.10,"vat_amount":0.03,"total":0.13})",
                         R"({"subtotal":null,"vat_amount":19.0,"total":119.0})"})
    EXPECT_TRUE(evaluate(make(ok), on()).passed) << ok << ": " << evaluate(make(ok), on()).reason;
  auto r = reason_of(R"({"subtotal":100.0,"vat_amount":50.0,"total":150.0})");
  EXPECT_TRUE(names(r, gate_check::vat_rate)) << r;
  EXPECT_NE(r.find("50.0%, outside 0-27%"), std::string::npos) << r;
  EXPECT_TRUE(names(reason_of(R"({"subtotal":null,"vat_amount":40.0,"total":100.0})"),
                    gate_check::vat_rate));
}

TEST(quality_gate_plausibility, absurd_magnitudes_fail) {
  auto r = reason_of(R"({"subtotal":null,"vat_amount":null,"total":5000000000.0})");
  EXPECT_TRUE(names(r, gate_check::amount_magnitude)) << r;
  r = reason_of(R"({"subtotal":null,"vat_amount":null,"total":null,
    "line_items":[{"description":"a","quantity":1,"unit_price":1,"amount":2e12}]})");
  EXPECT_TRUE(names(r, gate_check::amount_magnitude)) << r;
}

TEST(quality_gate_plausibility, due_date_before_the_invoice_date_fails) {
  auto r = reason_of(R"({"invoice_date":"2024-03-15","due_date":"2024-03-01","total":10.0})");
  EXPECT_TRUE(names(r, gate_check::due_before_invoice)) << r;
  EXPECT_TRUE(
      evaluate(make(R"({"invoice_date":"2024-03-15","due_date":"2024-03-15","total":10.0})"), on())
          .passed);
}

TEST(quality_gate_plausibility, dates_outside_a_plausible_range_fail) {
  EXPECT_TRUE(
      names(reason_of(R"({"invoice_date":"1970-01-01","total":10.0})"), gate_check::date_range));
  EXPECT_TRUE(
      names(reason_of(R"({"invoice_date":"2031-01-01","total":10.0})"), gate_check::date_range));
  EXPECT_TRUE(
      names(reason_of(R"({"invoice_date":"2024-01-01","due_date":"2034-01-01","total":10.0})"),
            gate_check::date_range));
  EXPECT_TRUE(evaluate(make(R"({"invoice_date":"2027-01-01","total":10.0})"), on()).passed);
}

TEST(quality_gate_plausibility, an_invoice_number_that_is_a_date_phone_vat_id_or_postcode_fails) {
  EXPECT_TRUE(names(reason_of(R"({"invoice_number":"15.03.2024","total":1.0})"),
                    gate_check::invoice_number_is_date));
  EXPECT_TRUE(names(reason_of(R"({"invoice_number":"2024-03-15","total":1.0})"),
                    gate_check::invoice_number_is_date));
  EXPECT_TRUE(names(reason_of(R"({"invoice_number":"+49 30 1234567","total":1.0})"),
                    gate_check::invoice_number_is_phone));
  EXPECT_TRUE(names(reason_of(R"({"invoice_number":"030/1234567","total":1.0})"),
                    gate_check::invoice_number_is_phone));
  EXPECT_TRUE(names(reason_of(R"({"invoice_number":"DE123456789","total":1.0})"),
                    gate_check::invoice_number_is_vat_id));
  EXPECT_TRUE(names(reason_of(R"({"invoice_number":"29AABCU9603R1ZM","total":1.0})"),
                    gate_check::invoice_number_is_vat_id));
  EXPECT_TRUE(names(
      reason_of(
          R"({"invoice_number":"US94-1234567","supplier_vat_id":"US94-1234567","total":1.0})"),
      gate_check::invoice_number_is_vat_id));
  EXPECT_TRUE(names(
      reason_of(
          R"({"invoice_number":"80331","supplier_address":"Hauptstraße 15, 80331 München","total":1.0})"),
      gate_check::invoice_number_is_postcode));
  EXPECT_TRUE(names(reason_of(R"({"invoice_number":"RG1 3AA","total":1.0})"),
                    gate_check::invoice_number_is_postcode));
  // Real invoice numbers pass.
  for (const char* n : {"INV-2024-0117", "RE-24-00891", "TVC/2024/031", "2024-4471", "F2024/00123",
                        "FV/2024/05/117", "80331", "0012345", "2024-03-4471"}) {
    auto json = std::string{R"({"invoice_number":")"} + n
                + R"(","supplier_address":"Hauptstraße 15, 80332 München","total":1.0})";
    auto v = evaluate(make(json), on());
    EXPECT_TRUE(v.passed) << n << ": " << v.reason;
  }
}

TEST(quality_gate_plausibility, can_be_switched_off) {
  auto o = on();
  o.check_plausibility = false;
  EXPECT_TRUE(
      evaluate(make(R"({"subtotal":-29670868687.0,"vat_amount":29670869006.0,"total":319.0})"), o)
          .passed);
}
