// Fuzz target: HTTP response headers as every adapter reads them, above all Retry-After
// (delay-seconds, retry-after-ms, HTTP dates) in SQS, S3, the LLM client and Document AI, and
// the error classification of non-2xx answers that carries it.
// Input: an HTTP response in fuzz_support.hpp's form.
#include "adapters/extraction/openai_extractor.hpp"
#include "adapters/ocr/document_ai_transcriber.hpp"
#include "adapters/queue/sqs_protocol.hpp"
#include "adapters/storage/s3_protocol.hpp"
#include "messages/error.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

namespace {

void check_wait(int64_t ms) {
  FUZZ_CHECK(ms == -1 || (ms >= 0 && ms <= max_retry_after_ms));
}

void check_error(const error& e) {
  FUZZ_CHECK(!e.code.empty());
  FUZZ_CHECK(e.retry_after_ms == -1
             || (e.retry_after_ms >= 0 && e.retry_after_ms <= max_retry_after_ms));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  auto response = fuzz::as_response(in);

  // The whole input as one header value, too.
  check_wait(parse_retry_after_seconds(in));
  http_response direct;
  direct.status = 503;
  direct.headers = {{"retry-after", std::string{in}}};
  check_wait(sqs::retry_after_ms(direct));
  check_wait(retry_after_ms(direct));
  direct.headers = {{"retry-after-ms", std::string{in}}};
  check_wait(retry_after_ms(direct));

  (void)response.header("retry-after");
  (void)response.header("x-amzn-query-error");
  check_wait(sqs::retry_after_ms(response));
  check_wait(retry_after_ms(response));
  check_error(sqs::parse_error(response));
  check_error(s3::parse_error(response, true, "key"));
  check_error(s3::parse_error(response, false, ""));
  check_error(classify_document_ai_error(response));
  openai_options opts;
  opts.api_key = "sk-fuzz-secret";
  auto chat = parse_chat_response(response, opts);
  if (!chat)
    check_error(chat.error());
  return 0;
}
