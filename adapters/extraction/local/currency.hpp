// Currency markers: ISO 4217 codes, symbols and words as invoices print them, before or after
// the amount.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

namespace ingestd::local_rules {

struct currency_marker {
  std::string_view text; ///< lower case
  std::string_view code; ///< ISO 4217
  bool word;             ///< needs word boundaries (codes, words); symbols do not
};

/// Every marker the rules know, longest first where one is a prefix of another.
const std::vector<currency_marker>& currency_markers();

/// Currency markers in a lowered string, with their offsets.
std::vector<std::pair<size_t, std::string_view>> currency_hits(std::string_view low);

} // namespace ingestd::local_rules
