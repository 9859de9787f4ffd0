// Fuzz target: the local rule-based extractor over transcription text (OCR output or a PDF's text
// layer: whatever the uploaded document says), its amount, date and currency rules, and what
// reviewers' corrections teach about a supplier, which is read from the same text.
#include <regex>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/extraction/extraction_schema.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "adapters/extraction/supplier_knowledge.hpp"
#include "messages/text.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

namespace {

/// A review of `x` that changed its invoice number to a token of the text and its total, then
/// what it taught applied to the same text: every fact and the data stay storable.
void learn_and_apply(std::string_view text, const extraction& x) {
  for (char decimal : {'.', ','})
    (void)number_with(text.substr(0, 64), decimal);
  auto line = text.substr(0, text.find('\n'));
  auto token = line.substr(line.size() / 2, 16);
  auto label = label_before(text, token);
  auto after = value_after(text, label.empty() ? line.substr(0, 12) : std::string_view{label});
  FUZZ_CHECK(after.size() <= 64);
  rapidjson::Document reviewed;
  reviewed.Parse(x.structured_data.c_str(), x.structured_data.size());
  if (!reviewed.IsObject())
    return;
  auto& a = reviewed.GetAllocator();
  auto number = clean_text(after.empty() ? token : std::string_view{after});
  reviewed.RemoveMember("invoice_number");
  reviewed.AddMember("invoice_number", rapidjson::Value{number.c_str(), a}, a);
  reviewed.RemoveMember("total");
  reviewed.AddMember("total", rapidjson::Value{1.25}, a);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  reviewed.Accept(w);
  auto facts = learn(x.structured_data, buf.GetString(), text);
  for (auto& f : facts)
    FUZZ_CHECK(fuzz::valid_utf8(f.value));
  auto again = x;
  auto applied = apply_knowledge(facts, again, text);
  FUZZ_CHECK(validate_extraction_json(again.structured_data).ok());
  FUZZ_CHECK(fuzz::valid_utf8(again.structured_data));
  // The desk reads the detail back (a value may hold what ends an entry: no count to check).
  (void)learned_fields(learned_detail(applied));
}

} // namespace

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
  learn_and_apply(in, x);
  return 0;
}
