// The extraction quality gate: decides whether an extraction may be
// stored as valid, and says why not. A failed gate is a transient failure of the attempt.
#pragma once

#include <string>

#include "messages/error.hpp"
#include "messages/extraction.hpp"

namespace ingestd {

struct gate_options {
  /// Accept confidence "low" (refused by default; only for experiments).
  bool accept_low_confidence = false;
  /// Require subtotal + vat_amount ≈ total when all three are present.
  bool check_totals = true;
  /// Require the line amounts to sum to the subtotal (or, without subtotal and VAT, to the
  /// total) when both are present.
  bool check_line_items = true;
  /// Absolute tolerance for subtotal + VAT vs total (each figure is rounded to cents).
  double tolerance = 0.02;
  /// Extra tolerance per line item for the line sum (each line amount is rounded on its own).
  double tolerance_per_line = 0.01;

  /// Plausibility checks besides the sums: signs, VAT range and rate, magnitude,
  /// dates, and an invoice number that is not a date, phone number, VAT id or postcode.
  bool check_plausibility = true;
  /// The highest VAT rate that exists anywhere (Hungary: 27%), in percent.
  double max_vat_rate = 27.0;
  /// No figure on one document is this large (in its currency's units).
  double max_amount = 1e9;
  /// Dates before this are not an invoice's.
  std::string earliest_date = "1990-01-01";
  /// "Today" as YYYY-MM-DD for the date range (an invoice date at most a year ahead, a due date
  /// at most three years after the invoice date); empty means the system clock's UTC date.
  std::string today;
};

/// The names of the plausibility checks, as they appear in a failed verdict's reason
/// ("plausibility check <name> failed: ...").
namespace gate_check {
inline constexpr const char* negative_amount = "negative_amount";
inline constexpr const char* vat_exceeds_total = "vat_exceeds_total";
inline constexpr const char* vat_rate = "vat_rate";
inline constexpr const char* amount_magnitude = "amount_magnitude";
inline constexpr const char* due_before_invoice = "due_before_invoice";
inline constexpr const char* date_range = "date_range";
inline constexpr const char* invoice_number_is_date = "invoice_number_is_date";
inline constexpr const char* invoice_number_is_phone = "invoice_number_is_phone";
inline constexpr const char* invoice_number_is_vat_id = "invoice_number_is_vat_id";
inline constexpr const char* invoice_number_is_postcode = "invoice_number_is_postcode";
} // namespace gate_check

/// Checks, in order: structured_data parses, extraction_successful, confidence not low, totals
/// reconcile, line items reconcile, then the plausibility checks of gate_check. The verdict's
/// reason names the first failed check, e.g.
/// "totals do not reconcile: subtotal 100.00 + vat 19.00 != total 120.00" or
/// "plausibility check vat_rate failed: vat 50.00 on subtotal 100.00 is 50.0%, outside 0-27%".
/// A credit note (every figure zero or negative) passes the sign check.
gate_verdict evaluate(const extraction& x, const gate_options& opts = {});

/// The fields without which a failed verdict is "critical fields missing".
inline constexpr const char* critical_fields[]
    = {"invoice_number", "invoice_date", "supplier_name", "total"};

/// The error ("extraction.gate_failed") a failed verdict becomes in the pipeline: critical fields
/// missing → permanent (human review at once); otherwise the extraction is incomplete →
/// transient when a retry can change the answer (an LLM's first attempt; the caller says), else
/// permanent.
error gate_error(const gate_verdict& verdict, bool retry_can_help);

} // namespace ingestd
