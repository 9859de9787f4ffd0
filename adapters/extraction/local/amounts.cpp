// Amounts: numbers in every decimal and grouping style.
#include "adapters/extraction/local/amounts.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "adapters/extraction/local/text.hpp"

namespace ingestd::local_rules {

/// Interprets the digits-and-separators run `raw`; nullopt when it is not a well-formed number
/// (a date like 15.03.2024 is not).
namespace {

/// Indian grouping: "1,23,456.78" (lakh and crore: two-digit groups before the last three).
std::optional<std::pair<double, bool>> indian_grouping(std::string_view raw) {
  size_t dot = raw.find('.');
  auto whole = raw.substr(0, dot);
  auto frac = dot == std::string_view::npos ? std::string_view{} : raw.substr(dot + 1);
  if (dot != std::string_view::npos
      && (frac.empty() || frac.size() > 2 || !std::all_of(frac.begin(), frac.end(), is_digit)))
    return std::nullopt;
  // whole: 1-2 digits, then ",dd" groups (at least one), then ",ddd"
  size_t last = whole.rfind(',');
  if (last == std::string_view::npos || whole.size() - last - 1 != 3)
    return std::nullopt;
  size_t groups = 0;
  size_t pos = 0;
  size_t first = whole.find(',');
  if (first == 0 || first > 2)
    return std::nullopt;
  pos = first;
  while (pos < last) {
    if (pos + 3 >= whole.size() || whole[pos + 3] != ',' || !is_digit(whole[pos + 1])
        || !is_digit(whole[pos + 2]))
      return std::nullopt;
    pos += 3;
    ++groups;
  }
  if (groups == 0
      || !std::all_of(whole.begin() + static_cast<long>(last) + 1, whole.end(), is_digit))
    return std::nullopt;
  std::string digits;
  for (char c : whole)
    if (is_digit(c))
      digits += c;
  if (!frac.empty())
    digits += "." + std::string{frac};
  return std::make_pair(std::strtod(digits.c_str(), nullptr), !frac.empty());
}

} // namespace

std::optional<std::pair<double, bool>> interpret_number(std::string_view raw) {
  if (auto in = indian_grouping(raw))
    return in;
  std::vector<size_t> seps;
  for (size_t i = 0; i < raw.size(); ++i)
    if (!is_digit(raw[i]))
      seps.push_back(i);
  auto to_double = [](const std::string& digits) { return std::strtod(digits.c_str(), nullptr); };
  std::string digits;
  for (char c : raw)
    if (is_digit(c))
      digits += c;
  if (seps.empty())
    return std::make_pair(to_double(digits), false);
  char last = raw[seps.back()];
  size_t after_last = raw.size() - seps.back() - 1;
  bool has_dot = raw.find('.') != std::string_view::npos;
  bool has_comma = raw.find(',') != std::string_view::npos;
  char decimal = 0;
  if (last == ' ' || last == '\'') {
    decimal = 0;
  } else if (has_dot && has_comma) {
    decimal = last;
  } else {
    size_t count = static_cast<size_t>(std::count(raw.begin(), raw.end(), last));
    // A single separator is a decimal point unless three digits follow it (a thousands
    // separator), except after a lone leading zero: 0,125.
    if (count == 1 && (after_last != 3 || (seps.back() == 1 && raw[0] == '0')))
      decimal = last;
    else
      decimal = 0;
  }
  // Every grouping separator must be followed by exactly three digits before the next separator,
  // and the first group has one to three digits.
  size_t prev = 0;
  bool first = true;
  for (size_t k = 0; k < seps.size(); ++k) {
    size_t p = seps[k];
    bool is_decimal = decimal != 0 && k + 1 == seps.size();
    if (first) {
      if (p == 0 || (p > 3 && !is_decimal))
        return std::nullopt;
      first = false;
    } else if (p - prev - 1 != 3) {
      return std::nullopt;
    }
    if (!is_decimal && raw[p] == decimal)
      return std::nullopt;
    prev = p;
  }
  if (decimal != 0 && (after_last == 0 || after_last > 4))
    return std::nullopt;
  if (decimal == 0 && after_last != 3)
    return std::nullopt;
  // A space only groups thousands in the comma-decimal style ("1 234,56"); "10 100.00" is two
  // table cells.
  if (raw.find(' ') != std::string_view::npos && decimal != ',')
    return std::nullopt;
  if (decimal == 0)
    return std::make_pair(to_double(digits), false);
  std::string num = digits.substr(0, digits.size() - after_last) + "."
                    + digits.substr(digits.size() - after_last);
  return std::make_pair(to_double(num), true);
}

/// True when a currency symbol (€, ₹, £) or the rupee's "Rs." ends right before offset `i`.
bool symbol_before(std::string_view s, size_t i) {
  return (i >= 3 && (s.substr(i - 3, 3) == "\xE2\x82\xAC" || s.substr(i - 3, 3) == "\xE2\x82\xB9"))
         || (i >= 2 && s.substr(i - 2, 2) == "\xC2\xA3")
         || (i >= 3 && s.substr(i - 3, 3) == "rs." && (i == 3 || !is_word(s[i - 4])));
}

/// Every number in `s` (a line with dates already blanked out). `space_groups`: read
/// "1 234,56" as one number (off when a table row's "1 238,40" is a quantity and a price).
std::vector<amount_hit> find_amounts(std::string_view s, bool space_groups) {
  std::vector<amount_hit> out;
  size_t i = 0;
  while (i < s.size()) {
    if (!is_digit(s[i])
        || (i > 0
            && (((is_word(s[i - 1]) || s[i - 1] == '.') && !symbol_before(s, i))
                || s[i - 1] == ','))) {
      ++i;
      continue;
    }
    size_t start = i;
    size_t j = i;
    while (j < s.size()) {
      char c = s[j];
      // The number goes on over a digit, a separator followed by a digit, and (space_groups) a
      // space followed by exactly three digits.
      bool separator
          = (c == '.' || c == ',' || c == '\'') && j + 1 < s.size() && is_digit(s[j + 1]);
      bool space_group = space_groups && c == ' ' && j + 3 < s.size() && is_digit(s[j + 1])
                         && is_digit(s[j + 2]) && is_digit(s[j + 3])
                         && (j + 4 >= s.size() || !is_digit(s[j + 4]));
      if (!is_digit(c) && !separator && !space_group)
        break;
      ++j;
    }
    size_t end = j;
    // A number glued to letters ("DE123456789", "INV-2024") is an identifier, not an amount.
    if (end < s.size() && is_letter(s[end]) && !(end + 1 < s.size() && s[end] == 'x')) {
      i = end;
      continue;
    }
    auto raw = s.substr(start, end - start);
    auto num = interpret_number(raw);
    if (!num) {
      // Retry without space grouping: "10 100.00" is 10 then 100.00.
      auto sp = raw.find(' ');
      if (sp != std::string_view::npos) {
        end = start + sp;
        num = interpret_number(s.substr(start, end - start));
      }
    }
    if (!num) {
      // e.g. a dotted identifier; skip the whole run
      i = j;
      continue;
    }
    amount_hit hit{num->first, start, end, num->second, false};
    size_t k = end;
    while (k < s.size() && s[k] == ' ')
      ++k;
    if (k < s.size() && s[k] == '%')
      hit.percent = true;
    // A leading minus ("-50.00", "- 50,00 €") makes the amount negative.
    size_t b = start;
    while (b > 0 && s[b - 1] == ' ')
      --b;
    if (b > 0 && s[b - 1] == '-' && (b < 2 || !is_word(s[b - 2])))
      hit.value = -hit.value;
    out.push_back(hit);
    i = end;
  }
  return out;
}

} // namespace ingestd::local_rules
