// Dates: numeric and with month names, to YYYY-MM-DD.
#include "adapters/extraction/local/dates.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <utility>

#include "adapters/extraction/local/text.hpp"

namespace ingestd::local_rules {

namespace {

/// Month names and abbreviations, lower case, a row per language (data: add a language here).
/// Polish dates use the genitive ("15 marca 2024"); both forms are listed.
struct month_row {
  std::string_view language;
  std::array<std::string_view, 12> names;
};

const std::vector<month_row>& month_rows() {
  static const std::vector<month_row> rows{
      {"en",
       {"january", "february", "march", "april", "may", "june", "july", "august", "september",
        "october", "november", "december"}},
      {"en", {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
      {"en",
       {"jan", "feb", "mar", "apr", "may", "june", "july", "aug", "sept", "oct", "nov", "dec"}},
      {"de",
       {"januar", "februar", "m\xC3\xA4rz", "april", "mai", "juni", "juli", "august", "september",
        "oktober", "november", "dezember"}},
      {"de",
       {"j\xC3\xA4nner", "feber", "maerz", "apr", "mai", "jun", "jul", "aug", "sep", "okt", "nov",
        "dez"}},
      {"de",
       {"jan", "feb", "m\xC3\xA4r", "apr", "mai", "jun", "jul", "aug", "sep", "okt", "nov", "dez"}},
      {"de", {"jan", "feb", "mrz", "apr", "mai", "jun", "jul", "aug", "sep", "okt", "nov", "dez"}},
      {"fr",
       {"janvier", "f\xC3\xA9vrier", "mars", "avril", "mai", "juin", "juillet", "ao\xC3\xBBt",
        "septembre", "octobre", "novembre",
        "d\xC3\xA9"
        "cembre"}},
      {"fr",
       {"janv", "f\xC3\xA9vr", "mars", "avr", "mai", "juin", "juil", "ao\xC3\xBBt", "sept", "oct",
        "nov",
        "d\xC3\xA9"
        "c"}},
      {"nl",
       {"januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus", "september",
        "oktober", "november", "december"}},
      {"nl", {"jan", "feb", "mrt", "apr", "mei", "jun", "jul", "aug", "sep", "okt", "nov", "dec"}},
      {"es",
       {"enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre",
        "octubre", "noviembre", "diciembre"}},
      {"es",
       {"ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "setiembre", "oct", "nov", "dic"}},
      {"it",
       {"gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto",
        "settembre", "ottobre", "novembre", "dicembre"}},
      {"it", {"gen", "feb", "mar", "apr", "mag", "giu", "lug", "ago", "sett", "ott", "nov", "dic"}},
      {"pl",
       {"stycznia", "lutego", "marca", "kwietnia", "maja", "czerwca", "lipca", "sierpnia",
        "wrze\xC5\x9Bnia",
        "pa\xC5\xBA"
        "dziernika",
        "listopada", "grudnia"}},
      {"pl",
       {"stycze\xC5\x84", "luty", "marzec", "kwiecie\xC5\x84", "maj", "czerwiec", "lipiec",
        "sierpie\xC5\x84", "wrzesie\xC5\x84",
        "pa\xC5\xBA"
        "dziernik",
        "listopad", "grudzie\xC5\x84"}},
      {"pl",
       {"sty", "lut", "mar", "kwi", "maj", "cze", "lip", "sie", "wrz", "pa\xC5\xBA", "lis", "gru"}},
  };
  return rows;
}

} // namespace

const std::vector<std::pair<std::string, int>>& month_spellings() {
  static const std::vector<std::pair<std::string, int>> all = [] {
    std::vector<std::pair<std::string, int>> v;
    auto add = [&v](std::string name, int m) {
      for (const auto& e : v)
        if (e.first == name)
          return;
      v.emplace_back(std::move(name), m);
    };
    for (const auto& row : month_rows())
      for (int m = 0; m < 12; ++m) {
        add(std::string{row.names[static_cast<size_t>(m)]}, m + 1);
        add(fold_ascii(row.names[static_cast<size_t>(m)]), m + 1);
      }
    std::stable_sort(v.begin(), v.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    return v;
  }();
  return all;
}

namespace {

// The date patterns, matched by hand (each_match) with the meaning of the regular expressions
// they were written as, given above each; tests/unit/extraction/local_patterns_test.cpp compares
// the two on many lines. Optional parts are tried present first, alternatives in their order.

/// A match: [begin, end) without the byte of context before it, and its numbered parts.
struct date_match {
  size_t begin = 0;
  size_t end = 0;
  std::array<std::string_view, 4> part{};
};

bool lower_ascii_at(std::string_view s, size_t i) {
  return i < s.size() && s[i] >= 'a' && s[i] <= 'z';
}

/// A run of exactly one or two digits at `i` (a longer run is no such part): its length, or 0.
size_t one_or_two(std::string_view s, size_t i) {
  size_t n = digits_at(s, i);
  return n == 1 || n == 2 ? n : 0;
}

/// `(\d{4}|\d{2})(?![0-9])`: the length of the year at `i`, or 0.
size_t year_at(std::string_view s, size_t i) {
  size_t n = digits_at(s, i);
  return n == 4 || n == 2 ? n : 0;
}

/// Where an optional part may end: after it where `len` (its length at `at`, 0 if absent) says
/// it is there, else only at `at`.
struct optional_part {
  std::array<size_t, 2> ends{};
  size_t count = 0;
  optional_part(size_t at, size_t len) {
    if (len > 0)
      ends[count++] = at + len;
    ends[count++] = at;
  }
  const size_t* begin() const { return ends.data(); }
  const size_t* end() const { return ends.data() + count; }
};

/// The length of the first of `words` at `i`, or 0.
size_t word_at(std::string_view s, size_t i, std::initializer_list<std::string_view> words) {
  for (auto w : words)
    if (s.substr(std::min(i, s.size())).starts_with(w))
      return w.size();
  return 0;
}

/// `(^|[^0-9])(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?![0-9])`: year, month, day.
std::optional<date_match> year_month_day(std::string_view s, size_t i) {
  if (digits_at(s, i) != 4 || !byte_in(s, i + 4, "-/."))
    return {};
  size_t j = i + 5, month = one_or_two(s, j);
  if (month == 0 || !byte_in(s, j + month, "-/."))
    return {};
  size_t k = j + month + 1, day = one_or_two(s, k);
  if (day == 0)
    return {};
  return date_match{i, k + day, {s.substr(i, 4), s.substr(j, month), s.substr(k, day)}};
}

/// `(^|[^0-9.])(\d{1,2})\. ?(\d{1,2})\. ?(\d{4}|\d{2})(?![0-9])`: day, month, year.
std::optional<date_match> dotted(std::string_view s, size_t i) {
  size_t day = one_or_two(s, i);
  if (day == 0 || !byte_in(s, i + day, "."))
    return {};
  size_t j = i + day + 1;
  j += byte_in(s, j, " ") ? 1 : 0;
  size_t month = one_or_two(s, j);
  if (month == 0 || !byte_in(s, j + month, "."))
    return {};
  size_t k = j + month + 1;
  k += byte_in(s, k, " ") ? 1 : 0;
  size_t year = year_at(s, k);
  if (year == 0)
    return {};
  return date_match{i, k + year, {s.substr(i, day), s.substr(j, month), s.substr(k, year)}};
}

/// `(^|[^0-9/])(\d{1,2})([/-])(\d{1,2})[/-](\d{4}|\d{2})(?![0-9])`: first, separator, second,
/// year.
std::optional<date_match> slashed(std::string_view s, size_t i) {
  size_t a = one_or_two(s, i);
  if (a == 0 || !byte_in(s, i + a, "/-"))
    return {};
  size_t j = i + a + 1, b = one_or_two(s, j);
  if (b == 0 || !byte_in(s, j + b, "/-"))
    return {};
  size_t k = j + b + 1, year = year_at(s, k);
  if (year == 0)
    return {};
  return date_match{
      i, k + year, {s.substr(i, a), s.substr(i + a, 1), s.substr(j, b), s.substr(k, year)}};
}

/// MONTH(?![a-z]) at `i`, then the rest of a pattern: `then(spelling, end)` for each spelling
/// there that no letter follows, longest first (the alternation's order), until one answers.
template <class Then>
std::optional<date_match> month_at(std::string_view s, size_t i, Then then) {
  static const std::array<bool, 256> first = [] {
    std::array<bool, 256> f{};
    for (const auto& [name, m] : month_spellings())
      f[static_cast<unsigned char>(name[0])] = true;
    return f;
  }();
  if (i >= s.size() || !first[static_cast<unsigned char>(s[i])])
    return {};
  for (const auto& [name, m] : month_spellings())
    if (s.substr(i).starts_with(name) && !lower_ascii_at(s, i + name.size()))
      if (auto found = then(s.substr(i, name.size()), i + name.size()))
        return found;
  return {};
}

/// `\.?,?[ -]?(?:de )?(\d{4})` at `q` (after a month's name): where the year begins, or npos.
size_t year_after_month(std::string_view s, size_t q) {
  for (size_t e : optional_part(q, byte_in(s, q, ".") ? 1 : 0))
    for (size_t f : optional_part(e, byte_in(s, e, ",") ? 1 : 0))
      for (size_t g : optional_part(f, byte_in(s, f, " -") ? 1 : 0))
        for (size_t h : optional_part(g, word_at(s, g, {"de "})))
          if (digits_at(s, h) >= 4)
            return h;
  return std::string_view::npos;
}

/// "15 March 2024", "15. März 2024", "1er mars 2024", "15 de marzo de 2024", "15-Mar-2024":
/// `(^|[^0-9])(\d{1,2})(?:st|nd|rd|th|er)?\.?[ -]?(?:of |de )?(MONTH)(?![a-z])` and then
/// `\.?,?[ -]?(?:de )?(\d{4})`: day, month, year.
std::optional<date_match> day_month_year(std::string_view s, size_t i) {
  size_t day = one_or_two(s, i);
  if (day == 0)
    return {};
  auto then = [&](std::string_view month, size_t q) -> std::optional<date_match> {
    size_t year = year_after_month(s, q);
    if (year == std::string_view::npos)
      return {};
    return date_match{i, year + 4, {s.substr(i, day), month, s.substr(year, 4)}};
  };
  size_t p = i + day;
  for (size_t a : optional_part(p, word_at(s, p, {"st", "nd", "rd", "th", "er"})))
    for (size_t b : optional_part(a, byte_in(s, a, ".") ? 1 : 0))
      for (size_t c : optional_part(b, byte_in(s, b, " -") ? 1 : 0))
        for (size_t d : optional_part(c, word_at(s, c, {"of ", "de "})))
          if (auto found = month_at(s, d, then))
            return found;
  return {};
}

/// "March 15, 2024": `(^|[^a-z])(MONTH)(?![a-z])\.? (\d{1,2})(?:st|nd|rd|th)?,? (\d{4})`: month,
/// day, year.
std::optional<date_match> month_day_year(std::string_view s, size_t i) {
  return month_at(s, i, [&](std::string_view month, size_t q) -> std::optional<date_match> {
    for (size_t a : optional_part(q, byte_in(s, q, ".") ? 1 : 0)) {
      if (!byte_in(s, a, " "))
        continue;
      size_t run = digits_at(s, a + 1);
      for (size_t day : {size_t{2}, size_t{1}}) {
        if (run < day)
          continue;
        size_t b = a + 1 + day;
        for (size_t c : optional_part(b, word_at(s, b, {"st", "nd", "rd", "th"})))
          for (size_t d : optional_part(c, byte_in(s, c, ",") ? 1 : 0))
            if (byte_in(s, d, " ") && digits_at(s, d + 1) >= 4)
              return date_match{i, d + 5, {month, s.substr(a + 1, day), s.substr(d + 1, 4)}};
      }
    }
    return {};
  });
}

int number(std::string_view digits) {
  int v = 0;
  for (char c : digits)
    v = v * 10 + (c - '0');
  return v;
}

} // namespace

int month_number(std::string_view name) {
  for (const auto& [n, m] : month_spellings())
    if (name == n)
      return m;
  return 0;
}

bool valid_date(int y, int m, int d) {
  if (y < 1900 || y > 2200 || m < 1 || m > 12 || d < 1)
    return false;
  static const int days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (d > days[m - 1])
    return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return !(m == 2 && d == 29 && !leap);
}

std::string iso(int y, int m, int d) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", y, m, d);
  return buf;
}

int full_year(int y) {
  if (y >= 100)
    return y;
  return y < 70 ? 2000 + y : 1900 + y;
}

/// Every date in a lowered line. Ambiguous slash dates are read with `day_first`.
std::vector<date_hit> find_dates(const std::string& low, bool day_first) {
  std::vector<date_hit> out;
  // Every pattern needs digits, the ones with month names a four-digit year: most lines of a
  // page have neither.
  size_t run = 0, longest_run = 0;
  for (char c : low) {
    run = is_digit(c) ? run + 1 : 0;
    longest_run = std::max(longest_run, run);
  }
  if (longest_run == 0)
    return out;
  auto add = [&](size_t begin, size_t end, int y, int mo, int d, bool ambiguous, int a, int b) {
    if (!valid_date(y, mo, d))
      return;
    for (const auto& h : out)
      if (begin < h.end && h.begin < end)
        return;
    out.push_back(date_hit{iso(y, mo, d), begin, end, ambiguous, a, b, y});
  };
  auto not_digit = [](char c) { return !is_digit(c); };
  // A day or month that cannot be one, read by OCR with a 9 for the 0 of a slashed or dotted
  // zero ("97.01.2024", "25.98.2024"), is that zero.
  auto part = [](std::string_view s, int limit) {
    int v = number(s);
    return v > limit && s.size() == 2 && s[0] == '9' ? v - 90 : v;
  };
  each_match(
      low, not_digit, [&](size_t i) { return year_month_day(low, i); },
      [&](const date_match& m) {
        add(m.begin, m.end, number(m.part[0]), number(m.part[1]), number(m.part[2]), false, 0, 0);
      });
  if (longest_run >= 4) {
    // Month names are matched on the line without accents (OCR misplaces them: "aoüt" for
    // "août"), offsets mapped back to the line.
    std::string folded;
    std::vector<size_t> origin;
    for (size_t i = 0; i < low.size(); ++i) {
      origin.push_back(i);
      if (i + 1 < low.size())
        if (char b = ascii_base(low[i], low[i + 1]); b != 0) {
          folded += b;
          ++i;
          continue;
        }
      folded += low[i];
    }
    origin.push_back(low.size());
    auto add_folded = [&](const date_match& m, int y, int mo, int d) {
      add(origin[m.begin], origin[m.end], y, mo, d, false, 0, 0);
    };
    each_match(
        folded, not_digit, [&](size_t i) { return day_month_year(folded, i); },
        [&](const date_match& m) {
          add_folded(m, number(m.part[2]), month_number(m.part[1]), number(m.part[0]));
        });
    each_match(
        folded, [](char c) { return c < 'a' || c > 'z'; },
        [&](size_t i) { return month_day_year(folded, i); },
        [&](const date_match& m) {
          add_folded(m, number(m.part[2]), month_number(m.part[0]), number(m.part[1]));
        });
  }
  each_match(
      low, [](char c) { return !is_digit(c) && c != '.'; },
      [&](size_t i) { return dotted(low, i); },
      [&](const date_match& m) {
        add(m.begin, m.end, full_year(number(m.part[2])), part(m.part[1], 12), part(m.part[0], 31),
            false, 0, 0);
      });
  each_match(
      low, [](char c) { return !is_digit(c) && c != '/'; },
      [&](size_t i) { return slashed(low, i); },
      [&](const date_match& m) {
        int a = part(m.part[0], 31), b = part(m.part[2], 31), y = full_year(number(m.part[3]));
        bool dash = m.part[1] == "-";
        if (a > 12)
          add(m.begin, m.end, y, b, a, false, a, b);
        else if (b > 12)
          add(m.begin, m.end, y, a, b, false, a, b);
        else if (day_first || dash)
          add(m.begin, m.end, y, b, a, true, a, b);
        else
          add(m.begin, m.end, y, a, b, true, a, b);
      });
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.begin < y.begin; });
  return out;
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm), for "payable within 30 days".
long days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const long yoe = y - era * 400;
  const long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

std::string civil_from_days(long z) {
  z += 719468;
  const long era = (z >= 0 ? z : z - 146096) / 146097;
  const long doe = z - era * 146097;
  const long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const long y = yoe + era * 400;
  const long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const long mp = (5 * doy + 2) / 153;
  const long d = doy - (153 * mp + 2) / 5 + 1;
  const long m = mp + (mp < 10 ? 3 : -9);
  return iso(static_cast<int>(y + (m <= 2)), static_cast<int>(m), static_cast<int>(d));
}

} // namespace ingestd::local_rules
