// Fuzz target: messages/text (utf8_prefix, clean_text, clean_json), the last step before any
// outside text reaches a text or jsonb column.
// Input: 2 bytes of limit for utf8_prefix, then the text.
#include "messages/text.hpp"

#include <rapidjson/document.h>

#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  size_t limit = size >= 2 ? (size_t{data[0]} << 8 | data[1]) % (size + 1) : size;
  auto text = in.substr(std::min<size_t>(2, size));

  auto prefix = utf8_prefix(text, limit);
  FUZZ_CHECK(prefix.size() <= limit || prefix.size() == text.size());
  FUZZ_CHECK(prefix.size() <= text.size());
  FUZZ_CHECK(prefix.data() == text.data());
  // A cut never takes more than the last (incomplete) character's 3 leading bytes.
  FUZZ_CHECK(text.size() <= limit || limit - prefix.size() <= 3);
  if (fuzz::valid_utf8(text))
    FUZZ_CHECK(fuzz::valid_utf8(prefix));

  auto clean = clean_text(text);
  FUZZ_CHECK(clean.find('\0') == std::string::npos);
  FUZZ_CHECK(fuzz::valid_utf8(clean));
  FUZZ_CHECK(clean.size() <= 3 * text.size());
  FUZZ_CHECK(clean_text(clean) == clean);
  if (fuzz::valid_utf8(text) && text.find('\0') == std::string_view::npos)
    FUZZ_CHECK(clean == text);

  auto json = clean_json(text);
  FUZZ_CHECK(json.find('\0') == std::string::npos);
  FUZZ_CHECK(fuzz::valid_utf8(json));
  // Valid JSON stays valid JSON. JSON is UTF-8 without raw NUL: RapidJSON (without encoding
  // validation) also takes some other bytes, and a NUL for the end of its input.
  rapidjson::Document before;
  before.Parse<rapidjson::kParseIterativeFlag>(text.data(), text.size());
  if (!before.HasParseError() && fuzz::valid_utf8(text)
      && text.find('\0') == std::string_view::npos) {
    rapidjson::Document after;
    after.Parse<rapidjson::kParseIterativeFlag>(json.data(), json.size());
    FUZZ_CHECK(!after.HasParseError());
    // ... and cleaning it again changes nothing. (Not for text that is not JSON: dropping a raw
    // NUL can join "\ud\0800" into a new escape, which a second pass then treats.)
    FUZZ_CHECK(clean_json(json) == json);
  }
  return 0;
}
