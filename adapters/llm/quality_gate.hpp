// The extraction quality gate (seed 000 step 9, issue 6): decides whether an extraction may be
// stored as valid, and says why not. A failed gate is a transient failure of the attempt.
#pragma once

#include <string>

#include "messages/error.hpp"
#include "messages/extraction.hpp"

namespace ingestd {

struct gate_options {
  /// Accept confidence "low" (seed 000 refuses it; only for experiments).
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
};

/// Checks, in order: structured_data parses, extraction_successful, confidence not low, totals
/// reconcile, line items reconcile. The verdict's reason names the first failed check, e.g.
/// "totals do not reconcile: subtotal 100.00 + vat 19.00 != total 120.00".
gate_verdict evaluate(const extraction& x, const gate_options& opts = {});

/// The transient error ("extraction.gate_failed") that a failed verdict becomes in the pipeline.
error gate_error(const gate_verdict& verdict);

} // namespace ingestd
