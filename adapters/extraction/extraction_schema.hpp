// The one JSON schema of an extracted invoice (config/extraction_schema.json, embedded in the
// binary): the LLM is asked for it (strict json_schema) and every answer is validated against it.
#pragma once

#include <string_view>

#include "messages/extraction.hpp"
#include "messages/result.hpp"

namespace ingestd {

/// The schema's text, exactly as in config/extraction_schema.json.
std::string_view extraction_schema_json();

/// Checks that `json` is one JSON object valid against the schema. Errors are transient (an LLM
/// may answer correctly next time): "llm.invalid_json" when it does not parse,
/// "llm.schema_invalid" (naming the keyword and the JSON pointer) when it does not validate.
result<void> validate_extraction_json(std::string_view json);

/// Validates `json` and reads it into an extraction: structured_data is `json` re-serialised
/// compactly; extraction_successful, confidence and missing_fields come from the document.
/// Tokens and model are left for the caller.
result<extraction> extraction_from_json(std::string_view json);

} // namespace ingestd
