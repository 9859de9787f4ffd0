// The result of extracting structured data from a transcription.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ingestd {

struct extraction {
  /// The invoice as a JSON object matching config/extraction_schema.json.
  std::string structured_data;
  bool extraction_successful = false;
  /// "high", "medium" or "low".
  std::string confidence;
  std::vector<std::string> missing_fields;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  /// The model that answered, or "local-rules" for the local extractor.
  std::string model;
  /// Set when a fallback produced it (e.g. the local rules for a text too long for the LLM):
  /// the document is completed for review with this reason.
  std::string review_reason;
};

/// The quality gate's verdict on an extraction.
struct gate_verdict {
  bool passed = false;
  /// Why it did not pass (empty when it did), recorded as the ingestion's last_error.
  std::string reason;
  /// Failed with a critical field (invoice number, invoice date, supplier, total) missing: a
  /// non-standard document a retry will not read either (human review at once).
  bool critical_fields_missing = false;
};

} // namespace ingestd
