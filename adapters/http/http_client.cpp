// Out-of-line parts of the HTTP port: the case-insensitive header look-up of http_response and
// the Retry-After seconds every adapter reads.
// (The engine itself is curl_engine.cpp.)
#include "adapters/http/http_client.hpp"

#include <algorithm>

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

int64_t parse_retry_after_seconds(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
    value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
    value.remove_suffix(1);
  if (value.empty())
    return -1;
  constexpr int64_t max_seconds = max_retry_after_ms / 1000;
  int64_t seconds = 0;
  for (char c : value) {
    if (c < '0' || c > '9')
      return -1;
    // Saturates instead of overflowing: "99999999999999999999" is the longest wait.
    seconds = std::min(max_seconds, seconds * 10 + (c - '0'));
  }
  return seconds * 1000;
}

} // namespace ingestd
