// Text normalisation: lines, lower case, cleaned values, cells.
#include "adapters/extraction/local/text.hpp"

#include "messages/text.hpp"

namespace ingestd::local_rules {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

/// ASCII lower case plus the German capitals Ä Ö Ü (same byte length, so offsets stay valid).
std::string lower(std::string_view s) {
  std::string out{s};
  for (size_t i = 0; i < out.size(); ++i) {
    auto c = static_cast<unsigned char>(out[i]);
    if (c >= 'A' && c <= 'Z') {
      out[i] = static_cast<char>(c - 'A' + 'a');
    } else if ((c == 0xC3 || c == 0xC4 || c == 0xC5) && i + 1 < out.size()) {
      auto n = static_cast<unsigned char>(out[i + 1]);
      unsigned cp = ((c & 0x1Fu) << 6) | (n & 0x3Fu);
      unsigned lc = cp;
      if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7)
        lc = cp + 0x20; // Latin-1: À-Þ
      else if ((cp >= 0x100 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177))
        lc = cp | 1u; // Latin Extended-A pairs: even capital, odd small (Ą ą, Ę ę, Ś ś)
      else if (((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E)) && (cp & 1u))
        lc = cp + 1; // odd capital, even small (Ł ł, Ń ń, Ź ź, Ż ż)
      out[i] = static_cast<char>(0xC0 | (lc >> 6));
      out[i + 1] = static_cast<char>(0x80 | (lc & 0x3F));
      ++i;
    }
  }
  return out;
}

char ascii_base(char lead, char next) {
  auto c = static_cast<unsigned char>(lead);
  auto n = static_cast<unsigned char>(next);
  if (c == 0xC2)
    return n == 0xB0 || n == 0xBA ? 'o' : 0; // ° º (as in N°, Nº)
  if (c < 0xC3 || c > 0xC5 || (n & 0xC0) != 0x80)
    return 0;
  unsigned cp = ((c & 0x1Fu) << 6) | (n & 0x3Fu);
  // Small letters only (the text is lowered first).
  static constexpr std::string_view latin1 = "aaaaaaaceeeeiiii"
                                             "dnooooo/ouuuuyty"; // U+00E0-00FF
  if (cp >= 0xE0 && cp <= 0xFF) {
    char b = latin1[cp - 0xE0];
    return b == '/' ? 0 : b;
  }
  switch (cp) {
  case 0x105:
    return 'a'; // ą
  case 0x107:
  case 0x10D:
    return 'c'; // ć č
  case 0x119:
  case 0x11B:
    return 'e'; // ę ě
  case 0x142:
    return 'l'; // ł
  case 0x144:
  case 0x148:
    return 'n'; // ń ň
  case 0x15B:
  case 0x161:
    return 's'; // ś š
  case 0x17A:
  case 0x17C:
  case 0x17E:
    return 'z'; // ź ż ž
  default:
    return 0;
  }
}

size_t match_folded(std::string_view low, size_t i, std::string_view pattern) {
  size_t j = i;
  size_t k = 0;
  while (k < pattern.size()) {
    char pb = k + 1 < pattern.size() ? ascii_base(pattern[k], pattern[k + 1]) : 0;
    char tb = j + 1 < low.size() ? ascii_base(low[j], low[j + 1]) : 0;
    if (pb != 0 && tb != 0) {
      // Both accented: the same base letter will do ("zamöwienia" for "zamówienia").
      if (pb != tb)
        return std::string_view::npos;
      j += 2;
      k += 2;
    } else if (tb != 0) {
      // The text has an accented letter where the pattern has its base letter.
      if (tb != pattern[k])
        return std::string_view::npos;
      j += 2;
      ++k;
    } else if (pb != 0) {
      // The base letter where the pattern has the accented one (OCR dropped the accent); OCR
      // without Polish reads ł as t ("zaptacono" for "zapłacono").
      bool l_stroke = pattern[k] == '\xC5' && pattern[k + 1] == '\x82';
      if (j >= low.size() || (low[j] != pb && !(l_stroke && low[j] == 't')))
        return std::string_view::npos;
      ++j;
      k += 2;
    } else {
      if (j >= low.size() || low[j] != pattern[k])
        return std::string_view::npos;
      ++j;
      ++k;
    }
  }
  return j;
}

std::string fold_ascii(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (i + 1 < s.size()) {
      if (char b = ascii_base(s[i], s[i + 1]); b != 0) {
        out += b;
        ++i;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

/// Collapses runs of spaces and strips separators at both ends.
std::string clean_value(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space)
      out += ' ';
    space = false;
    out += c;
  }
  while (!out.empty() && (out.back() == ',' || out.back() == ';' || out.back() == ':'))
    out.pop_back();
  size_t start = 0;
  while (start < out.size() && (out[start] == ':' || out[start] == '-' || out[start] == ' '))
    ++start;
  return out.substr(start);
}

/// The text normalised to '\n'-separated lines: CR dropped, form feeds (page breaks) and
/// tabs made into layout the rules understand, non-breaking and thin spaces made plain.
std::vector<std::string> split_lines(std::string_view text) {
  std::string norm;
  norm.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == '\r')
      continue;
    if (c == '\f') {
      norm += '\n';
    } else if (c == '\t') {
      norm += "  ";
    } else if (c == 0xC2 && i + 1 < text.size()
               && static_cast<unsigned char>(text[i + 1]) == 0xA0) {
      norm += ' ';
      ++i;
    } else if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80
               && (static_cast<unsigned char>(text[i + 2]) == 0xAF
                   || static_cast<unsigned char>(text[i + 2]) == 0x89)) {
      norm += ' ';
      i += 2;
    } else {
      norm += static_cast<char>(c);
    }
  }
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos <= norm.size()) {
    auto nl = norm.find('\n', pos);
    if (nl == std::string::npos)
      nl = norm.size();
    std::string line = norm.substr(pos, nl - pos);
    while (!line.empty() && (line.back() == ' '))
      line.pop_back();
    // No invoice row is this long; the cap bounds the regex work on garbage input.
    if (line.size() > max_line_bytes)
      line.resize(utf8_prefix(line, max_line_bytes).size());
    lines.push_back(join_spaced_title(std::move(line)));
    if (lines.size() >= max_lines)
      break;
    pos = nl + 1;
  }
  return lines;
}

/// OCR splits large letter-spaced titles ("REC HNUNG", "INVO IC E"): join them again when the
/// letters at the start of a line spell a title word.
std::string join_spaced_title(std::string line) {
  for (std::string_view title : {"invoice", "rechnung"}) {
    size_t k = 0;
    size_t i = 0;
    bool spaced = false;
    while (i < line.size() && k < title.size()) {
      char c = line[i];
      if (c == ' ' && k > 0 && i + 1 < line.size() && line[i + 1] != ' ') {
        spaced = true;
        ++i;
        continue;
      }
      char lc = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
      if (lc != title[k])
        break;
      ++k;
      ++i;
    }
    if (k == title.size() && spaced && (i == line.size() || line[i] == ' ')) {
      std::string word{title};
      for (auto& c : word)
        c = static_cast<char>(c - 'a' + 'A');
      return word + line.substr(i);
    }
  }
  return line;
}

std::vector<cell> cells_of(std::string_view line) {
  std::vector<cell> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ')
      ++i;
    if (i >= line.size())
      break;
    size_t start = i;
    while (i < line.size() && !(line[i] == ' ' && i + 1 < line.size() && line[i + 1] == ' '))
      ++i;
    out.push_back(cell{start, std::string{trim(line.substr(start, i - start))}});
  }
  return out;
}
} // namespace ingestd::local_rules
