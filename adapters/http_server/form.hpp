// The bodies a browser or a form-posting client sends: multipart/form-data (RFC 7578) and
// application/x-www-form-urlencoded, parsed from a body already bounded by the server. Every
// limit is checked as the input is read; nothing here allocates more than the input's size plus
// the parts' names.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/http_server/http_message.hpp"
#include "messages/result.hpp"

namespace ingestd::http_server {

struct form_limits {
  /// Parts (fields and files) in one body.
  size_t max_parts = 64;
  /// The header block of one part.
  size_t max_part_header_bytes = size_t{8} * 1024;
  /// Fields of an urlencoded body or a query.
  size_t max_fields = 256;
};

/// The boundary of a multipart/form-data Content-Type ("multipart/form-data; boundary=x", the
/// boundary possibly quoted); nullopt when the type is another one or the boundary is missing,
/// empty, longer than 70 characters or holds a character RFC 2046 does not allow.
std::optional<std::string> multipart_boundary(std::string_view content_type);

/// The parts of a multipart/form-data body, in order. Errors (permanent, "http.bad_form", naming
/// what is wrong): no opening delimiter, a part's headers unterminated or over the limit, a part
/// without Content-Disposition form-data or without a name, a part not closed by a delimiter, no
/// closing delimiter, more parts than the limit.
result<std::vector<form_part>> parse_multipart(std::string_view body, std::string_view boundary,
                                               const form_limits& limits = {});

/// The name/value pairs of an application/x-www-form-urlencoded text (also a query string),
/// percent-decoded with '+' as a space; at most `max_fields` (the rest is ignored). A malformed
/// escape is kept as written.
std::vector<std::pair<std::string, std::string>> parse_urlencoded(std::string_view text,
                                                                  size_t max_fields = 256);

/// The media type of a Content-Type value, lower-cased, without parameters or blanks.
std::string media_type(std::string_view content_type);

} // namespace ingestd::http_server
