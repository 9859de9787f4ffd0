// Fuzz target: S3's XML answers: error bodies (Code, Message, entities and character
// references), ListObjectsV2 pages, and the error classification of a non-2xx answer.
// Input: an HTTP response in fuzz_support.hpp's form; the whole input is also scanned as XML.
#include "adapters/storage/s3_protocol.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  auto response = fuzz::as_response(in);
  for (std::string_view xml : {in, std::string_view{response.body}}) {
    for (std::string_view tag : {"Code", "Message", "Key", "IsTruncated"}) {
      auto text = s3::xml_text(xml, tag);
      // Decoding only ever shortens (an entity is longer than what it stands for).
      FUZZ_CHECK(text.size() <= xml.size());
      // A decoded character reference is a character XML allows: never NUL or a surrogate.
      if (fuzz::valid_utf8(xml))
        FUZZ_CHECK(fuzz::valid_utf8(text));
      if (xml.find('\0') == std::string_view::npos)
        FUZZ_CHECK(text.find('\0') == std::string::npos);
    }
    if (auto page = s3::parse_list(xml)) {
      FUZZ_CHECK(page->keys.size() <= xml.size());
    } else {
      FUZZ_CHECK(page.error().code == "s3.bad_response");
    }
  }
  auto err = s3::parse_error(response, true, "ingestions/x/original.pdf");
  FUZZ_CHECK(!err.code.empty() && !err.message.empty());
  return 0;
}
