// Amounts as printed on invoices: every decimal and grouping style ("1,234.56", "1.234,56",
// "1 234,56", "1'234.50"), percentages, a leading minus.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace ingestd::local_rules {

struct amount_hit {
  double value = 0;
  size_t begin = 0;
  size_t end = 0;
  bool decimals = false;
  bool percent = false;
};

/// Interprets the digits-and-separators run `raw` as (value, has decimals); nullopt when it is
/// not a well-formed number (a date like 15.03.2024 is not).
std::optional<std::pair<double, bool>> interpret_number(std::string_view raw);

/// True when a currency symbol (€, £, ₹, ...) ends right before offset `i`.
bool symbol_before(std::string_view s, size_t i);

/// Every number in `s` (a line with dates already blanked out). `space_groups`: read
/// "1 234,56" as one number (off when a table row's "1 238,40" is a quantity and a price).
std::vector<amount_hit> find_amounts(std::string_view s, bool space_groups = true);

} // namespace ingestd::local_rules
