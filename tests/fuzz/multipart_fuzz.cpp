// Fuzz target: adapters/http_server/form (multipart_boundary, parse_multipart, parse_urlencoded)
// and messages/text's percent_decode, which read the bodies that browsers and HTTP clients send
// to the intake and the review desk.
// Input: the Content-Type up to the first '\n', then the body.
#include "adapters/http_server/form.hpp"

#include "messages/text.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;
using namespace ingestd::http_server;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  auto nl = in.find('\n');
  auto content_type = in.substr(0, nl);
  auto body = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);

  auto boundary = multipart_boundary(content_type);
  if (boundary) {
    FUZZ_CHECK(!boundary->empty() && boundary->size() <= 70);
    // Taken from the Content-Type, a quoted boundary unescaped ("a\b" is ab): its characters
    // appear there in order.
    size_t at = 0;
    for (char c : *boundary) {
      at = content_type.find(c, at);
      FUZZ_CHECK(at != std::string_view::npos);
      ++at;
    }
  }
  // The boundary as given, or the body's first line when the type names none: every input
  // reaches the parser.
  std::string b;
  if (boundary) {
    b = *boundary;
  } else {
    auto first = body.substr(0, std::min(body.find('\r'), size_t{72}));
    b = first.size() > 2 ? std::string{first.substr(2)} : std::string{"b"};
  }
  form_limits limits{8, 256, 16};
  auto parts = parse_multipart(body, b, limits);
  if (parts) {
    FUZZ_CHECK(parts->size() <= limits.max_parts);
    size_t total = 0;
    for (auto& p : *parts) {
      FUZZ_CHECK(!p.name.empty());
      FUZZ_CHECK(body.find(p.content) != std::string_view::npos);
      total += p.content.size();
    }
    FUZZ_CHECK(total <= body.size());
  } else {
    FUZZ_CHECK(parts.error().code == "http.bad_form");
  }

  auto pairs = parse_urlencoded(body, limits.max_fields);
  FUZZ_CHECK(pairs.size() <= limits.max_fields);
  for (auto& [k, v] : pairs)
    FUZZ_CHECK(k.size() + v.size() <= body.size());
  auto decoded = percent_decode(body, true);
  FUZZ_CHECK(decoded.size() <= body.size());
  return 0;
}
