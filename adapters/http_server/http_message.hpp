// The request and response that the HTTP endpoints (intake, admin, review desk) are written
// against, served by http_server::server. The names follow what the endpoints used before
// (method, path, matches, headers, params, body, form parts; status, headers, content), so that a
// handler reads as it did.
#pragma once

#include <any>
#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ingestd::http_server {

/// ASCII case-insensitive ordering, for header names.
struct case_insensitive_less {
  bool operator()(std::string_view a, std::string_view b) const;
  using is_transparent = void;
};

using header_map = std::multimap<std::string, std::string, case_insensitive_less>;
using param_map = std::multimap<std::string, std::string, std::less<>>;

/// One part of a multipart/form-data body: a form field or a file.
struct form_part {
  std::string name;
  /// Empty for a plain field.
  std::string filename;
  std::string content_type;
  std::string content;
};

using part_map = std::multimap<std::string, form_part, std::less<>>;

struct request {
  std::string method;
  /// The path, percent-decoded, without the query.
  std::string path;
  /// The route pattern's groups over `path` (set before a route's gate and handler run).
  std::smatch matches;
  header_map headers;
  /// The query's parameters, and an application/x-www-form-urlencoded body's fields.
  param_map params;
  /// The body as received (empty for a gate, which runs before the body is read).
  std::string body;
  /// The parts of a multipart/form-data body, fields and files alike, by field name.
  part_map files;
  std::string remote_addr;
  int remote_port = 0;
  /// Who the gates found the caller to be, in the area's own type (empty when no gate set it).
  std::any caller;

  bool has_header(std::string_view name) const;
  /// The first value of the header, or "".
  std::string get_header_value(std::string_view name) const;
  bool has_param(std::string_view name) const;
  std::string get_param_value(std::string_view name) const;
  bool is_multipart_form_data() const;
  bool has_file(std::string_view name) const;
  /// The part named `name` (an empty part when there is none).
  form_part get_file_value(std::string_view name) const;
};

struct response {
  int status = 200;
  header_map headers;
  std::string body;

  /// Replaces the header's values by this one.
  void set_header(std::string_view name, std::string value);
  bool has_header(std::string_view name) const;
  std::string get_header_value(std::string_view name) const;
  void set_content(std::string content, std::string_view content_type);
};

} // namespace ingestd::http_server
