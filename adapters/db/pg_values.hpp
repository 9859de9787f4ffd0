// Small conversions between C++ values and statement parameters or result text, shared by the
// PostgreSQL repositories.
#pragma once

#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "adapters/db/pg_connection.hpp"
#include "messages/text.hpp"
#include "messages/uuid.hpp"

namespace ingestd::pg {

/// The text, or NULL when it is empty.
inline param opt_text(const std::string& s) {
  return s.empty() ? param{} : param{s};
}

/// Text for a text column, cleaned (clean_text): a NUL or a character cut in half in a message
/// or an extracted string must not make PostgreSQL refuse the statement it travels in.
inline param clean(std::string_view s) {
  return clean_text(s);
}

/// clean(), or NULL when the text is empty.
inline param opt_clean(std::string_view s) {
  return s.empty() ? param{} : param{clean_text(s)};
}

/// A uuid column's text as a uuid (the nil uuid when it does not parse, e.g. NULL).
inline uuid parse_uuid(std::string_view text) {
  return uuid::parse(text).value_or(uuid{});
}

/// True when `text` is well-formed JSON (checked before a ::jsonb cast would fail the statement).
inline bool valid_json(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  return !doc.HasParseError();
}

} // namespace ingestd::pg
