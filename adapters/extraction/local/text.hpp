// Text normalisation for the local extractor: the page as '\n'-separated lines, lower case that
// keeps byte offsets, cleaned values and the cells of a column layout.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ingestd::local_rules {

inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_alpha_ascii(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
/// Bytes >= 0x80 belong to UTF-8 letters (umlauts, ß, é) as far as these rules are concerned.
inline bool is_letter(char c) {
  return is_alpha_ascii(c) || static_cast<unsigned char>(c) >= 0x80;
}
inline bool is_word(char c) {
  return is_letter(c) || is_digit(c);
}

/// The number of ASCII digits from `i` on.
inline size_t digits_at(std::string_view s, size_t i) {
  size_t n = 0;
  while (i + n < s.size() && is_digit(s[i + n]))
    ++n;
  return n;
}

/// Whether the byte at `i` is one of `set` (false past the end).
inline bool byte_in(std::string_view s, size_t i, std::string_view set) {
  return i < s.size() && set.find(s[i]) != std::string_view::npos;
}

/// Every match of a pattern `(^|C)R`, found as std::sregex_iterator finds a regular expression's:
/// the leftmost match, then the leftmost one from where it ended. `in_context(c)` says whether a
/// byte is in the class C; `rest(i)` matches R from `i` (just after the start of the text or the
/// byte of context), trying its alternatives in the expression's order, and answers a match with
/// its `end`, or nothing. The rules' patterns are written this way rather than as std::regex,
/// whose matcher took most of the extractor's time.
template <class InContext, class Rest, class Each>
void each_match(std::string_view s, InContext in_context, Rest rest, Each each) {
  size_t from = 0;
  while (from < s.size()) {
    decltype(rest(size_t{0})) found;
    for (size_t at = from; at < s.size() && !found; ++at) {
      if (at == 0)
        found = rest(0);
      if (!found && in_context(s[at]))
        found = rest(at + 1);
    }
    if (!found)
      return;
    each(*found);
    from = found->end;
  }
}

/// No invoice row is longer; the cap bounds the regex work on garbage input.
constexpr size_t max_line_bytes = 2'000;
constexpr size_t max_lines = 20'000;

/// `s` without spaces and tabs at both ends.
std::string_view trim(std::string_view s);

/// ASCII lower case plus the capitals of Latin-1 and Latin Extended-A (À-Þ, Ą, Ł, Ś, Ż, ...):
/// the same byte length, so offsets stay valid.
std::string lower(std::string_view s);

/// The ASCII letter under a lowered two-byte UTF-8 letter ("é" -> 'e', "ł" -> 'l', "°" -> 'o'),
/// or 0.
char ascii_base(char lead, char next);

/// Where `pattern` (lower case) matches `low` at `i`, accents ignored in either direction ("n°"
/// matches "no", "numero" matches "número", "échéance" matches "echeance"): the end offset in
/// `low`, or npos.
size_t match_folded(std::string_view low, size_t i, std::string_view pattern);

/// `s` with accented letters replaced by their ASCII base letters.
std::string fold_ascii(std::string_view s);

/// Collapses runs of spaces and strips separators at both ends.
std::string clean_value(std::string_view s);

/// The text normalised to '\n'-separated lines: CR dropped, form feeds (page breaks) and
/// tabs made into layout the rules understand, non-breaking and thin spaces made plain.
std::vector<std::string> split_lines(std::string_view text);

/// OCR splits large letter-spaced titles ("REC HNUNG", "INVO IC E"): join them again when the
/// letters at the start of a line spell a title word.
std::string join_spaced_title(std::string line);

/// A cell of a line: a run separated by two or more spaces, with its byte offset.
struct cell {
  size_t begin;
  std::string text;
};

std::vector<cell> cells_of(std::string_view line);

} // namespace ingestd::local_rules
