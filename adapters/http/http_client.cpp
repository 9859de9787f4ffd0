// Out-of-line parts of the HTTP port: the case-insensitive header look-up of http_response.
// (The engine itself is curl_engine.cpp.)
#include "adapters/http/http_client.hpp"

namespace ingestd {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto x = a[i] >= 'A' && a[i] <= 'Z' ? a[i] - 'A' + 'a' : a[i];
    auto y = b[i] >= 'A' && b[i] <= 'Z' ? b[i] - 'A' + 'a' : b[i];
    if (x != y)
      return false;
  }
  return true;
}

} // namespace

std::string_view http_response::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (iequals(key, name))
      return value;
  return {};
}

} // namespace ingestd
