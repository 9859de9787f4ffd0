// Dates: numeric and with month names, to YYYY-MM-DD.
#include "adapters/extraction/local/dates.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <regex>
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

/// Every spelling (with and without accents: OCR drops them) -> month, longest first.
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

std::string month_alternation() {
  std::string out = "(";
  for (const auto& [name, m] : month_spellings())
    out += (out.size() > 1 ? "|" : "") + name;
  return out + ")";
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
  static const std::regex ymd{R"((^|[^0-9])(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?![0-9]))"};
  static const std::regex dmy_dot{R"((^|[^0-9.])(\d{1,2})\. ?(\d{1,2})\. ?(\d{4}|\d{2})(?![0-9]))"};
  static const std::regex slash{R"((^|[^0-9/])(\d{1,2})([/-])(\d{1,2})[/-](\d{4}|\d{2})(?![0-9]))"};
  // "15 March 2024", "15. März 2024", "1er mars 2024", "15 de marzo de 2024", "15-Mar-2024"
  static const std::regex d_month{
      std::string{R"((^|[^0-9])(\d{1,2})(?:st|nd|rd|th|er)?\.?[ -]?(?:of |de )?)"}
      + month_alternation() + R"((?![a-z])\.?,?[ -]?(?:de )?(\d{4}))"};
  static const std::regex month_d{std::string{R"((^|[^a-z]))"} + month_alternation()
                                  + R"((?![a-z])\.? (\d{1,2})(?:st|nd|rd|th)?,? (\d{4}))"};
  std::vector<date_hit> out;
  // Every pattern needs digits, the ones with month names a four-digit year: most lines of a
  // page have neither, and the month alternation is the costly regex.
  size_t run = 0, longest_run = 0;
  for (char c : low) {
    run = is_digit(c) ? run + 1 : 0;
    longest_run = std::max(longest_run, run);
  }
  if (longest_run == 0)
    return out;
  auto add = [&](const std::smatch& m, int y, int mo, int d, bool ambiguous, int a, int b) {
    if (!valid_date(y, mo, d))
      return;
    size_t begin = static_cast<size_t>(m.position(0) + m.length(1));
    size_t end = static_cast<size_t>(m.position(0) + m.length(0));
    for (const auto& h : out)
      if (begin < h.end && h.begin < end)
        return;
    out.push_back(date_hit{iso(y, mo, d), begin, end, ambiguous, a, b, y});
  };
  auto each = [&](const std::regex& re, auto fn) {
    for (auto it = std::sregex_iterator(low.begin(), low.end(), re); it != std::sregex_iterator();
         ++it)
      fn(*it);
  };
  auto num = [](const std::ssub_match& s) { return std::stoi(s.str()); };
  // A day or month that cannot be one, read by OCR with a 9 for the 0 of a slashed or dotted
  // zero ("97.01.2024", "25.98.2024"), is that zero.
  auto part = [](const std::ssub_match& s, int limit) {
    int v = std::stoi(s.str());
    return v > limit && s.length() == 2 && s.str()[0] == '9' ? v - 90 : v;
  };
  each(ymd, [&](const std::smatch& m) { add(m, num(m[2]), num(m[3]), num(m[4]), false, 0, 0); });
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
    auto add_folded = [&](const std::smatch& m, int y, int mo, int d) {
      if (!valid_date(y, mo, d))
        return;
      size_t begin = origin[static_cast<size_t>(m.position(0) + m.length(1))];
      size_t end = origin[static_cast<size_t>(m.position(0) + m.length(0))];
      for (const auto& h : out)
        if (begin < h.end && h.begin < end)
          return;
      out.push_back(date_hit{iso(y, mo, d), begin, end, false, 0, 0, y});
    };
    auto each_folded = [&](const std::regex& re, auto fn) {
      for (auto it = std::sregex_iterator(folded.begin(), folded.end(), re);
           it != std::sregex_iterator(); ++it)
        fn(*it);
    };
    each_folded(d_month, [&](const std::smatch& m) {
      add_folded(m, num(m[4]), month_number(m[3].str()), num(m[2]));
    });
    each_folded(month_d, [&](const std::smatch& m) {
      add_folded(m, num(m[4]), month_number(m[2].str()), num(m[3]));
    });
  }
  each(dmy_dot, [&](const std::smatch& m) {
    add(m, full_year(num(m[4])), part(m[3], 12), part(m[2], 31), false, 0, 0);
  });
  each(slash, [&](const std::smatch& m) {
    int a = part(m[2], 31), b = part(m[4], 31), y = full_year(num(m[5]));
    bool dash = m[3].str() == "-";
    if (a > 12)
      add(m, y, b, a, false, a, b);
    else if (b > 12)
      add(m, y, a, b, false, a, b);
    else if (day_first || dash)
      add(m, y, b, a, true, a, b);
    else
      add(m, y, a, b, true, a, b);
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
