// Dates: numeric in every order (ISO, day.month.year, slashes and dashes) and with month names,
// normalised to YYYY-MM-DD; calendar arithmetic for "payable within 30 days".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ingestd::local_rules {

/// Every month's spelling in lower case the rules know (with and without accents: OCR drops
/// them), longest first, with its number.
const std::vector<std::pair<std::string, int>>& month_spellings();

/// 1-12 for a lowered month name or abbreviation in any language the rules know, else 0.
int month_number(std::string_view name);

bool valid_date(int y, int m, int d);
std::string iso(int y, int m, int d);
/// Two-digit years: 00-69 are 20xx, 70-99 are 19xx.
int full_year(int y);

struct date_hit {
  std::string iso;
  size_t begin = 0;
  size_t end = 0;
  /// Numeric with both parts <= 12 and '/' or '-': read by the document's preference.
  bool ambiguous = false;
  int a = 0, b = 0, y = 0;
};

/// Every date in a lowered line. Ambiguous slash dates are read with `day_first`.
std::vector<date_hit> find_dates(const std::string& low, bool day_first);

/// Days since 1970-01-01 (Howard Hinnant's algorithm), and back.
long days_from_civil(int y, int m, int d);
std::string civil_from_days(long z);

} // namespace ingestd::local_rules
