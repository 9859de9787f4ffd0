// Hexadecimal digits, read and written in one place: UUIDs in the protocol, digests and
// percent-escapes in the adapters.
#pragma once

#include <string>
#include <string_view>

namespace ingestd {

/// The value of one hex digit (either case), or -1 for any other character.
constexpr int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// The hex digit of the low four bits of `nibble`, lower case unless `upper`.
constexpr char hex_digit(unsigned nibble, bool upper = false) {
  return (upper ? "0123456789ABCDEF" : "0123456789abcdef")[nibble & 0xF];
}

/// Lower-case hex of arbitrary bytes.
inline std::string hex_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(hex_digit(c >> 4));
    out.push_back(hex_digit(c));
  }
  return out;
}

} // namespace ingestd
