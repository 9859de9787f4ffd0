// Identifiers: what a VAT identifier looks like by its country's pattern.
#pragma once

#include <string_view>
#include <vector>

namespace ingestd::local_rules {

/// The VAT identifiers on an upper-cased line by their countries' patterns, as printed (spaces,
/// dots and dashes still in): a prefix of the countries listed followed by 8 to 12 letters or
/// digits (single spaces between), or Switzerland's CHE-123.456.789 with MWST, TVA or IVA.
std::vector<std::string_view> vat_id_candidates(std::string_view upper);

} // namespace ingestd::local_rules
