// Fuzz target: the local rule-based extractor over transcription text (OCR output or a PDF's text
// layer: whatever the uploaded document says), and its amount, date and currency rules.
#include <regex>

#include "adapters/extraction/extraction_schema.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  if (size <= 256) {
    (void)local_rules::parse_amount(in);
    if (auto date = local_rules::parse_date(in, size % 2 == 0))
      FUZZ_CHECK(date->size() == 10 && (*date)[4] == '-' && (*date)[7] == '-');
    if (auto cur = local_rules::find_currency(in))
      FUZZ_CHECK(cur->size() == 3);
  }
  local_extractor_options opts;
  opts.ambiguous_dates_day_first = size % 2 == 1;
  extraction x;
  try {
    x = local_extractor{opts}.run(in);
  } catch (const std::regex_error&) {
    // The documented exception: extract() turns it into "extract.local_failed". Anything else
    // escaping run() is a bug.
    return 0;
  }
  // structured_data is stored as jsonb: it must match the schema.
  auto valid = validate_extraction_json(x.structured_data);
  FUZZ_CHECK(valid.ok());
  FUZZ_CHECK(x.confidence == "high" || x.confidence == "medium" || x.confidence == "low");
  return 0;
}
