// Text made safe for storage: UTF-8 boundaries and the cleaning of NUL and malformed bytes, in one
// place for the database adapters and every error message cut to a length.
#include "messages/text.hpp"

#include "messages/hex.hpp"

namespace ingestd {

namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD"; // U+FFFD

bool continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

/// The length of the well-formed UTF-8 character at s[i] (PostgreSQL's rules: no overlong
/// forms, no surrogates, nothing above U+10FFFF), or 0 when the bytes there are not one.
size_t char_length(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto lead = at(i);
  if (lead < 0x80)
    return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF; // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    lo = lead == 0xE0 ? 0xA0 : lo;
    hi = lead == 0xED ? 0x9F : hi;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    lo = lead == 0xF0 ? 0x90 : lo;
    hi = lead == 0xF4 ? 0x8F : hi;
  } else {
    return 0;
  }
  if (i + n > s.size() || at(i + 1) < lo || at(i + 1) > hi)
    return 0;
  for (size_t k = 2; k < n; ++k)
    if (!continuation(at(i + k)))
      return 0;
  return n;
}

/// The code unit of the escape "\uXXXX" at s[i], or -1 when there is none.
long escape_at(std::string_view s, size_t i) {
  if (i + 6 > s.size() || s[i] != '\\' || s[i + 1] != 'u')
    return -1;
  long unit = 0;
  for (size_t k = i + 2; k < i + 6; ++k) {
    auto v = hex_value(s[k]);
    if (v < 0)
      return -1;
    unit = unit * 16 + v;
  }
  return unit;
}

/// Appends the character at s[i] (or U+FFFD for a malformed byte; nothing for NUL) and returns
/// how many bytes it took.
size_t append_clean_char(std::string& out, std::string_view s, size_t i) {
  if (s[i] == '\0')
    return 1;
  auto n = char_length(s, i);
  if (n == 0) {
    out.append(replacement);
    return 1;
  }
  out.append(s.substr(i, n));
  return n;
}

bool is_clean(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto n = s[i] == '\0' ? 0 : char_length(s, i);
    if (n == 0)
      return false;
    i += n;
  }
  return true;
}

} // namespace

std::string_view utf8_prefix(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes)
    return s;
  // s[cut] is the first byte left out: when it continues a character, that character goes too.
  size_t cut = max_bytes;
  while (cut > 0 && max_bytes - cut < 3 && continuation(static_cast<unsigned char>(s[cut])))
    --cut;
  return s.substr(0, cut);
}

std::string clean_text(std::string_view s) {
  if (is_clean(s))
    return std::string{s};
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();)
    i += append_clean_char(out, s, i);
  return out;
}

std::string clean_json(std::string_view json) {
  if (is_clean(json) && json.find("\\u") == std::string_view::npos)
    return std::string{json};
  std::string out;
  out.reserve(json.size());
  bool in_string = false;
  for (size_t i = 0; i < json.size();) {
    char c = json[i];
    if (!in_string || c != '\\') {
      if (c == '"')
        in_string = !in_string;
      i += append_clean_char(out, json, i);
      continue;
    }
    auto unit = escape_at(json, i);
    if (unit < 0) {
      // Another escape (\" \\ \n ...): both characters as they are, so \" does not end the string.
      out.push_back(c);
      i += 1;
      if (i < json.size())
        i += append_clean_char(out, json, i);
      continue;
    }
    if (unit == 0) {
      i += 6; // jsonb cannot hold U+0000
    } else if (unit >= 0xD800 && unit <= 0xDBFF) {
      auto low = escape_at(json, i + 6);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        out.append(json.substr(i, 12));
        i += 12;
      } else {
        out.append("\\ufffd");
        i += 6;
      }
    } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
      out.append("\\ufffd"); // a low surrogate without its high one
      i += 6;
    } else {
      out.append(json.substr(i, 6));
      i += 6;
    }
  }
  return out;
}

std::string percent_decode(std::string_view text, bool plus_as_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+' && plus_as_space) {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0
               && hex_value(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2])));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

} // namespace ingestd
