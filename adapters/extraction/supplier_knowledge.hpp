// Learning from corrections: what a reviewer corrects on one supplier's invoice is applied to the
// same supplier's next ones. The supplier is recognised by what the machine read (its VAT id, else
// its name, letters and digits only), so that the next document, read the same way, finds it.
// What is learned from an approval that changed the machine's data:
// - the supplier's name and VAT id as the reviewer wrote them (the canonical name, a VAT id the
//   machine missed or misread);
// - the supplier's date order: a reviewer who swapped day and month of the invoice date teaches
//   that this supplier writes dates the other way round;
// - the label that holds the supplier's invoice number: a reviewer who corrected the number to a
//   value printed after "Beleg-Nr." (or under it) teaches that label;
// - the supplier's decimal separator: a reviewer who corrected an amount printed "1.250" from
//   1250 to 1.25 teaches that this supplier's lone separator before three digits is a decimal one.
// The label and the separator are found in the document's transcription, and applied to the next
// document's.
// A tenant's facts are kept in the database (supplier_knowledge, migration 026) with the number of
// reviews that taught them; reviewers see and delete them on the desk.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/db/learning_repository.hpp"
#include "messages/extraction.hpp"

namespace ingestd {

/// The supplier keys of an extraction's JSON data: "vat:..." when it has a VAT id, "name:..."
/// when it has a name (none when it names no supplier). Facts are learned under each, and the
/// first key with a fact about a field decides that field.
std::vector<std::string> supplier_keys(const std::string& structured_data);

/// What an approval teaches: the machine's data and the reviewer's, both JSON objects, and the
/// document's transcription (empty when it has none: the label and the separator are not learned).
std::vector<supplier_fact> learn(const std::string& machine_data, const std::string& reviewed_data,
                                 std::string_view text = {});

/// The facts as stored with an approval: [{"supplier", "field", "value"}, ...].
std::string facts_json(const std::vector<supplier_fact>& facts);

/// Applies the tenant's facts about the extraction's supplier to `x` (its structured_data, read
/// from `text`), and says which it applied: "supplier_name 'ACME GmbH' (learned from 3 reviews)".
/// Facts about other suppliers, and values the data already has, change nothing.
std::vector<std::string> apply_knowledge(const std::vector<supplier_fact>& facts, extraction& x,
                                         std::string_view text = {});

/// What was applied, as the ingest stage's audit step "learned" says it ("; " between facts).
std::string learned_detail(const std::vector<std::string>& applied);

/// The fields of the extraction that such a detail changed, each with what changed it (one
/// fact's words): {"invoice_date", "date_order day and month swapped (learned from 1 review)"}.
std::vector<std::pair<std::string, std::string>> learned_fields(std::string_view detail);

/// The text printed before `value` in `text`: the words without digits right before it on its
/// line (at most three, 64 bytes at most, without a closing ':', '#' or '.'), else the line above
/// it when the value starts its line and that line is such words alone; empty when `value` is not
/// printed.
std::string label_before(std::string_view text, std::string_view value);

/// The value printed after `label` (as label_before finds it) in `text`: the token after it on
/// its line (past ':', '#', '.'), else the first token of the next line; it has a digit and 64
/// bytes at most. Empty when the label is not printed or nothing such follows it.
std::string value_after(std::string_view text, std::string_view label);

/// `raw` (digits with '.', ',', '\'' or ' ' between) read with `decimal` as its decimal separator
/// and the others grouping thousands; nullopt when it is not such a number.
std::optional<double> number_with(std::string_view raw, char decimal);

} // namespace ingestd
