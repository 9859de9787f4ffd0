// The review desk's JSON request bodies read into what they ask for, and a reviewer's fields
// applied to a document's data: pure (RapidJSON and the extraction schema only), for review_desk,
// review_service, their tests and tests/fuzz/review_request_fuzz.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "messages/result.hpp"

namespace ingestd {

/// The providers a reprocess chooses for its new ingestion; empty: the configured one of the
/// node that takes it.
struct provider_choice {
  std::string transcription;
  std::string extraction;
};

/// What a POST /review/api/documents/{id}/{action} asks for.
struct review_request {
  /// "fields" as JSON text (whatever its type); empty when the body has none.
  std::string fields;
  /// "version", the document's version reviewed: set for every action but "check".
  std::optional<int64_t> version;
  /// reject: "reason" when it is a string (up to a NUL), else empty.
  std::string reason;
  /// reprocess: "transcription_provider" and "extraction_provider".
  provider_choice providers;
};

/// The body of `action` ("check", "approve", "reject" or "reprocess"); empty is {}. Errors,
/// "review.invalid" with a message for the client: not a JSON object, nested deeper than 16
/// levels, fields with text a jsonb column refuses (clean_json would change them), no integer
/// "version" (but for check); for reprocess, a "provider" or a provider's name that is neither a
/// string nor null.
result<review_request> parse_review_request(std::string_view action, std::string_view body);

/// A reviewer's fields merged into a document's data.
struct review_fields_applied {
  /// The whole data after the change (JSON object text).
  std::string data;
  /// {"field": {"from":..., "to":...}} for the fields whose value changed.
  std::string changes = "{}";
};

/// Applies `fields_json` (review_request::fields: a JSON object of the extraction schema's
/// fields, or empty) to `structured_data` (an empty invoice when that is not a JSON object). A
/// change recomputes "missing_fields" unless the fields set it. Errors ("review.invalid"): the
/// fields are not an object, or name a field the schema does not know.
result<review_fields_applied> apply_review_fields(std::string_view structured_data,
                                                  std::string_view fields_json);

} // namespace ingestd
