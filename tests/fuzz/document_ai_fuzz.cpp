// Fuzz target: Google Document AI's process answers (the proto3 JSON forms: pages, quality
// scores, defects, text anchors) and its error answers.
// Input: an HTTP response in fuzz_support.hpp's form; the whole input is also parsed as a 200
// body.
#include <cmath>

#include "adapters/ocr/document_ai_transcriber.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

namespace {

void check(const result<transcription>& t) {
  if (!t) {
    FUZZ_CHECK(t.error().code == "docai.bad_response");
    return;
  }
  FUZZ_CHECK(std::isfinite(t->quality_score) && t->quality_score >= 0 && t->quality_score <= 1);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  auto response = fuzz::as_response(in);
  check(parse_document_ai_response(in));
  check(parse_document_ai_response(response.body));
  auto err = classify_document_ai_error(response);
  FUZZ_CHECK(!err.code.empty());
  (void)map_document_ai_defect(in);
  return 0;
}
