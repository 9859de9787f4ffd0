// The quality gate: seed 000's criteria plus arithmetic, with reasons that name the failed check.
#include <gtest/gtest.h>

#include "adapters/llm/quality_gate.hpp"

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
  auto e = gate_error(v);
  EXPECT_TRUE(e.transient());
  EXPECT_EQ(e.code, "extraction.gate_failed");
  EXPECT_EQ(e.message, v.reason);
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
  EXPECT_EQ(v.reason, "line items do not reconcile: 2 line amounts sum to 90.00 != subtotal 100.00");
}

TEST(quality_gate, without_subtotal_and_vat_lines_sum_to_the_total) {
  EXPECT_TRUE(evaluate(make(R"({"subtotal":null,"vat_amount":null,"total":100.0,
    "line_items":[{"description":"a","quantity":1,"unit_price":100,"amount":100.0}]})")).passed);
  EXPECT_FALSE(evaluate(make(R"({"subtotal":null,"vat_amount":null,"total":100.0,
    "line_items":[{"description":"a","quantity":1,"unit_price":90,"amount":90.0}]})")).passed);
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
