// Text made safe for storage: a byte-count limit that never cuts a UTF-8 character in half, and
// the cleaning of strings and JSON that PostgreSQL would refuse (NUL, bytes that are not UTF-8);
// the one decoding of %XX escapes (URLs, forms, S3 keys, configured URLs); and the ASCII case and
// blank trimming that protocol text (headers, forms, credentials) is read with.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ingestd {

/// The longest prefix of `s` of at most `max_bytes` bytes that ends on a character boundary:
/// the limit for every message, excerpt and detail that is cut to a length.
std::string_view utf8_prefix(std::string_view s, size_t max_bytes);

/// `s` as a text column accepts it: NUL bytes dropped, every byte that does not belong to a
/// well-formed UTF-8 character replaced by U+FFFD. Clean text comes back unchanged.
std::string clean_text(std::string_view s);

/// JSON text as a jsonb column accepts it: clean_text, and inside strings the escape \u0000
/// dropped and an unpaired surrogate escape replaced by \ufffd. Valid JSON stays valid JSON;
/// clean JSON comes back unchanged.
std::string clean_json(std::string_view json);

/// `text` with its %XX escapes decoded (a malformed escape is kept as it is), and '+' as a space
/// when `plus_as_space` (forms, S3 event keys).
std::string percent_decode(std::string_view text, bool plus_as_space = false);

/// `c` lower-cased if it is an ASCII letter (whatever the locale).
inline char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// `s` without the characters of `blanks` at either end.
inline std::string_view trim_blanks(std::string_view s, std::string_view blanks = " \t") {
  auto first = s.find_first_not_of(blanks);
  if (first == std::string_view::npos)
    return {};
  return s.substr(first, s.find_last_not_of(blanks) - first + 1);
}

} // namespace ingestd
