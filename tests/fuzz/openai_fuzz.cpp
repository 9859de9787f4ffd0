// Fuzz target: an OpenAI-compatible server's answer (chat completion or error body), the JSON
// the model wrote (schema validation, reading it into an extraction) and the quality gate over
// the result.
// Input: an HTTP response in fuzz_support.hpp's form; the body is also tried as a 200 answer and
// as the model's content on its own.
#include "adapters/extraction/extraction_schema.hpp"
#include "adapters/extraction/openai_extractor.hpp"
#include "adapters/extraction/quality_gate.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

namespace {

void check_extraction(const result<extraction>& x) {
  if (!x) {
    FUZZ_CHECK(!x.error().code.empty());
    return;
  }
  // What is stored must be what the schema accepts, and the gate must give a verdict.
  FUZZ_CHECK(validate_extraction_json(x->structured_data).ok());
  auto verdict = evaluate(*x);
  if (!verdict.passed)
    FUZZ_CHECK(!gate_error(verdict, true).code.empty());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  openai_options opts;
  auto response = fuzz::as_response(in);
  extraction usage;
  check_extraction(parse_chat_response(response, opts, &usage));

  response.status = 200;
  check_extraction(parse_chat_response(response, opts));

  (void)validate_extraction_json(in);
  check_extraction(extraction_from_json(in));
  return 0;
}
