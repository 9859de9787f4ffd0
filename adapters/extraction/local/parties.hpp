// Parties: the supplier's and the customer's names and the supplier's address, from labelled
// blocks, a DIN 5008 sender line or the document's top block. The helpers, for unit tests.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ingestd::local_rules {

/// Words that mark a line as a title rather than a party's name ("invoice", "rechnung", ...).
bool is_title_line(std::string_view low);
bool is_salutation(std::string_view s);
bool looks_like_contact(std::string_view low);
/// Splits "Muster GmbH · Hauptstr. 1 · 10115 Berlin" (a DIN 5008 sender line) into parts.
std::vector<std::string> split_sender_line(std::string_view line);
bool has_postcode(std::string_view s);
bool is_street_word(std::string_view tok);
bool is_house_number(std::string_view tok);
bool is_capitalised(std::string_view tok);
/// Two address blocks side by side joined into one row: the row split where a street address
/// ends or begins. Nullopt when no street marks the split.
std::optional<std::pair<std::string, std::string>> split_two_blocks(std::string_view line);

} // namespace ingestd::local_rules
