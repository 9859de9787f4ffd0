// Fuzz target: the SQS JSON protocol's answers (ReceiveMessage, the batch calls,
// GetQueueAttributes, GetQueueUrl) and error answers.
// Input: an HTTP response in fuzz_support.hpp's form; its body is also given to every answer
// parser.
#include "adapters/queue/sqs_protocol.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  auto response = fuzz::as_response(in);
  for (std::string_view body : {in, std::string_view{response.body}}) {
    if (auto msgs = sqs::parse_receive(body)) {
      for (const auto& m : *msgs)
        FUZZ_CHECK(!m.id.empty() && !m.receipt.empty() && m.receive_count >= 0);
    } else {
      FUZZ_CHECK(msgs.error().code == "sqs.bad_response");
    }
    if (auto answers = sqs::parse_batch(body)) {
      for (const auto& a : *answers)
        if (!a.ok)
          FUZZ_CHECK(!sqs::entry_error(a).code.empty());
    }
    (void)sqs::parse_attributes(body);
    if (auto stats = sqs::parse_stats(body))
      (void)stats;
    if (auto url = sqs::parse_queue_url(body))
      FUZZ_CHECK(!url->empty());
  }
  auto err = sqs::parse_error(response);
  FUZZ_CHECK(err.code.rfind("sqs.", 0) == 0);
  (void)sqs::is_stale_receipt(err.code);
  return 0;
}
