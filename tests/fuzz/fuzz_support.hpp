// Shared by the fuzz targets: a property check that aborts (so libFuzzer and the replay driver
// both report it), and the readable input form of an HTTP response:
//
//   <status>\n
//   <name>: <value>\n ...   (headers, until an empty line)
//   \n
//   <body>
//
// Anything that does not follow the form still becomes a response (status 0, the rest as body),
// so every input reaches the parser.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "adapters/http/http_client.hpp"

#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond);             \
      std::abort();                                                                                \
    }                                                                                              \
  } while (false)

namespace ingestd::fuzz {

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Splits off the first line (without its '\n'); `rest` is what follows.
inline std::string_view take_line(std::string_view& rest) {
  auto nl = rest.find('\n');
  auto line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
  if (!line.empty() && line.back() == '\r')
    line.remove_suffix(1);
  return line;
}

inline http_response as_response(std::string_view in) {
  http_response r;
  auto first = take_line(in);
  long status = 0;
  for (char c : first.substr(0, 4))
    if (c >= '0' && c <= '9')
      status = status * 10 + (c - '0');
  r.status = status;
  while (!in.empty()) {
    auto line = take_line(in);
    if (line.empty())
      break;
    auto colon = line.find(':');
    if (colon == std::string_view::npos)
      continue;
    std::string name{line.substr(0, colon)};
    for (auto& c : name)
      if (c >= 'A' && c <= 'Z')
        c = static_cast<char>(c - 'A' + 'a');
    auto value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ')
      value.remove_prefix(1);
    r.headers.emplace_back(std::move(name), std::string{value});
  }
  r.body = std::string{in};
  return r;
}

/// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points above
/// U+10FFFF), as PostgreSQL accepts it.
inline bool valid_utf8(std::string_view s) {
  size_t i = 0;
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < s.size()) {
    unsigned char c = at(i);
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
      if (c == 0xE0)
        lo = 0xA0;
      if (c == 0xED)
        hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
      if (c == 0xF0)
        lo = 0x90;
      if (c == 0xF4)
        hi = 0x8F;
    } else {
      return false;
    }
    if (i + n > s.size() || at(i + 1) < lo || at(i + 1) > hi)
      return false;
    for (size_t k = 2; k < n; ++k)
      if ((at(i + k) & 0xC0) != 0x80)
        return false;
    i += n;
  }
  return true;
}

} // namespace ingestd::fuzz
