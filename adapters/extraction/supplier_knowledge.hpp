// Learning from corrections: what a reviewer corrects on one supplier's invoice is applied to the
// same supplier's next ones. The supplier is recognised by what the machine read (its VAT id, else
// its name, letters and digits only), so that the next document, read the same way, finds it.
// What is learned from an approval that changed the machine's data:
// - the supplier's name and VAT id as the reviewer wrote them (the canonical name, a VAT id the
//   machine missed or misread);
// - the supplier's date order: a reviewer who swapped day and month of the invoice date teaches
//   that this supplier writes dates the other way round.
// A tenant's facts are kept in the database (supplier_knowledge, migration 026) with the number of
// reviews that taught them; reviewers see and delete them on the desk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "adapters/db/learning_repository.hpp"
#include "messages/extraction.hpp"

namespace ingestd {

/// The supplier keys of an extraction's JSON data: "vat:..." when it has a VAT id, "name:..."
/// when it has a name (none when it names no supplier). Facts are learned under each, and the
/// first key with a fact about a field decides that field.
std::vector<std::string> supplier_keys(const std::string& structured_data);

/// What an approval teaches: the machine's data and the reviewer's, both JSON objects.
std::vector<supplier_fact> learn(const std::string& machine_data, const std::string& reviewed_data);

/// The facts as stored with an approval: [{"supplier", "field", "value"}, ...].
std::string facts_json(const std::vector<supplier_fact>& facts);

/// Applies the tenant's facts about the extraction's supplier to `x` (its structured_data), and
/// says which it applied: "supplier_name 'ACME GmbH' (learned from 3 reviews)". Facts about other
/// suppliers, and values the data already has, change nothing.
std::vector<std::string> apply_knowledge(const std::vector<supplier_fact>& facts, extraction& x);

} // namespace ingestd
