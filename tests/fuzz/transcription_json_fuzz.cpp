// Fuzz target: the stored transcription JSON read back on crash resume
// (ingestions/{id}/transcription-output.json). A stored object is outside input too: it may be
// truncated, from an older version, or edited by hand.
#include <cmath>

#include "adapters/ocr/transcription_json.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  auto t = transcription_from_json(in);
  if (!t) {
    FUZZ_CHECK(t.error().code == "ocr.bad_transcription_json");
    FUZZ_CHECK(t.error().permanent());
    return 0;
  }
  // What the reader accepts is what the writer could have written: the two agree.
  FUZZ_CHECK(t->quality_score >= 0 && t->quality_score <= 1);
  FUZZ_CHECK(t->page_count == static_cast<int32_t>(t->pages.size()));
  // (Scores may move by an ulp: RapidJSON's fast number parsing is not correctly rounded, and its
  // full-precision mode in Debian's 1.1 has undefined behaviour of its own.)
  auto again = transcription_from_json(to_json(*t));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->text == t->text && again->provider == t->provider);
  FUZZ_CHECK(again->pages.size() == t->pages.size());
  FUZZ_CHECK(std::fabs(again->quality_score - t->quality_score) <= 1e-15);
  for (size_t i = 0; i < t->pages.size(); ++i) {
    const auto& a = again->pages[i];
    const auto& b = t->pages[i];
    FUZZ_CHECK(a.number == b.number && a.text == b.text && a.defects.size() == b.defects.size());
    FUZZ_CHECK(std::fabs(a.quality_score - b.quality_score) <= 1e-15);
    for (size_t j = 0; j < b.defects.size(); ++j)
      FUZZ_CHECK(a.defects[j].type == b.defects[j].type
                 && std::fabs(a.defects[j].confidence - b.defects[j].confidence) <= 1e-15);
  }
  (void)to_summary_json(*t);
  return 0;
}
