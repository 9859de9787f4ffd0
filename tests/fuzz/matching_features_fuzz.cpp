// Fuzz target: matching's pre-processing (describe_for_matching over an extraction and a
// transcription), the local rules over the features it gives, and the LLM matcher's reading of
// a model's answer.
// Input: "<structured_data JSON>\0<transcription text>"; without a NUL byte the whole input is
// tried as the JSON with an empty text, and as the text with no JSON.
#include <algorithm>
#include <cstring>

#include "adapters/matching/features.hpp"
#include "adapters/matching/llm_matcher.hpp"
#include "adapters/matching/local_matcher.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

namespace {

bool upper_alnum(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); });
}

void check(std::string_view json, std::string_view text) {
  auto f = describe_for_matching(json, text);
  static const char* kinds[] = {"invoice", "credit_note", "receipt", "purchase_order", "other"};
  FUZZ_CHECK(
      std::any_of(std::begin(kinds), std::end(kinds), [&](const char* k) { return f.kind == k; }));
  FUZZ_CHECK(upper_alnum(f.number));
  FUZZ_CHECK(f.references.size() <= 32);
  for (const auto& r : f.references) {
    FUZZ_CHECK(upper_alnum(r) && !r.empty());
    FUZZ_CHECK(r != f.number);
    FUZZ_CHECK(std::count(f.references.begin(), f.references.end(), r) == 1);
  }
  FUZZ_CHECK(fuzz::valid_utf8(f.counterparty));
  FUZZ_CHECK(fuzz::valid_utf8(f.normalized_counterparty));
  FUZZ_CHECK(f.searchable_text.size() <= max_searchable_text_bytes);
  FUZZ_CHECK(fuzz::valid_utf8(f.searchable_text));
  FUZZ_CHECK(f.text_hash.empty() == f.searchable_text.empty());
  FUZZ_CHECK(f.text_hash.empty() || f.text_hash.size() == 64);
  FUZZ_CHECK(f.currency.empty() || f.currency.size() == 3);
  FUZZ_CHECK(f.date.empty() || f.date.size() == 10);
  // Same input, same features.
  auto again = describe_for_matching(json, text);
  FUZZ_CHECK(again.number == f.number && again.references == f.references
             && again.text_hash == f.text_hash);

  match_document a;
  a.id = uuid{1, 1};
  a.features = f;
  match_document b = a;
  b.id = uuid{1, 2};
  auto edges = match_locally(a, {b, a});
  FUZZ_CHECK(edges.size() <= 1);
  for (const auto& e : edges)
    FUZZ_CHECK(e.other == b.id && e.confidence > 0 && e.confidence <= 1
               && match_kind_rank(e.kind) > 0);

  // The input as a model's answer about candidate b.
  auto answer = parse_match_answer(json, {b});
  if (answer) {
    for (const auto& e : *answer)
      FUZZ_CHECK(e.other == b.id && e.confidence >= 0 && e.confidence <= 1
                 && match_kind_rank(e.kind) > 0);
  } else {
    FUZZ_CHECK(answer.error().transient() && !answer.error().code.empty());
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  auto nul = in.find('\0');
  if (nul != std::string_view::npos) {
    check(in.substr(0, nul), in.substr(nul + 1));
  } else {
    check(in, {});
    check({}, in);
  }
  return 0;
}
