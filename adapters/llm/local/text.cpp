// Text normalisation: lines, lower case, cleaned values, cells.
#include "adapters/llm/local/text.hpp"

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
    char& c = out[i];
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    } else if (static_cast<unsigned char>(c) == 0xC3 && i + 1 < out.size()) {
      auto& n = reinterpret_cast<unsigned char&>(out[i + 1]);
      if (n == 0x84 || n == 0x96 || n == 0x9C)
        n = static_cast<unsigned char>(n + 0x20);
      ++i;
    }
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
    } else if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0xA0) {
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
