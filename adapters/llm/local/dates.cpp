// Dates: numeric and with month names, to YYYY-MM-DD.
#include "adapters/llm/local/dates.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <regex>
#include <utility>

namespace ingestd::local_rules {

int month_number(std::string_view name) {
  static const std::array<std::pair<std::string_view, int>, 34> names{{
    {"january", 1},  {"januar", 1},    {"jan", 1},     {"february", 2}, {"februar", 2},
    {"feb", 2},      {"march", 3},     {"m\xC3\xA4rz", 3}, {"maerz", 3}, {"mar", 3},
    {"m\xC3\xA4r", 3}, {"mrz", 3},     {"april", 4},   {"apr", 4},      {"may", 5},
    {"mai", 5},      {"june", 6},      {"juni", 6},    {"jun", 6},      {"july", 7},
    {"juli", 7},     {"jul", 7},       {"august", 8},  {"aug", 8},      {"september", 9},
    {"sept", 9},     {"sep", 9},       {"october", 10}, {"oktober", 10}, {"oct", 10},
    {"okt", 10},     {"november", 11}, {"nov", 11},    {"dec", 12},
  }};
  for (const auto& [n, m] : names)
    if (name == n)
      return m;
  if (name == "december" || name == "dezember" || name == "dez")
    return 12;
  return 0;
}

namespace {

const char* month_alternation() {
  return "(january|february|march|april|may|june|july|august|september|october|november|"
         "december|januar|februar|m\xC3\xA4rz|maerz|mai|juni|juli|oktober|dezember|sept|jan|feb|"
         "mar|m\xC3\xA4r|mrz|apr|jun|jul|aug|sep|oct|okt|nov|dec|dez)";
}

} // namespace

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
  static const std::regex d_month{std::string{R"((^|[^0-9])(\d{1,2})(?:st|nd|rd|th)?\.? ?(?:of )?)"}
                                  + month_alternation() + R"((?![a-z])\.?,? ?(\d{4}))"};
  static const std::regex month_d{std::string{R"((^|[^a-z]))"} + month_alternation()
                                  + R"((?![a-z])\.? (\d{1,2})(?:st|nd|rd|th)?,? (\d{4}))"};
  std::vector<date_hit> out;
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
    for (auto it = std::sregex_iterator(low.begin(), low.end(), re); it != std::sregex_iterator(); ++it)
      fn(*it);
  };
  auto num = [](const std::ssub_match& s) { return std::stoi(s.str()); };
  each(ymd, [&](const std::smatch& m) { add(m, num(m[2]), num(m[3]), num(m[4]), false, 0, 0); });
  each(d_month, [&](const std::smatch& m) {
    add(m, num(m[4]), month_number(m[3].str()), num(m[2]), false, 0, 0);
  });
  each(month_d, [&](const std::smatch& m) {
    add(m, num(m[4]), month_number(m[2].str()), num(m[3]), false, 0, 0);
  });
  each(dmy_dot, [&](const std::smatch& m) {
    add(m, full_year(num(m[4])), num(m[3]), num(m[2]), false, 0, 0);
  });
  each(slash, [&](const std::smatch& m) {
    int a = num(m[2]), b = num(m[4]), y = full_year(num(m[5]));
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
