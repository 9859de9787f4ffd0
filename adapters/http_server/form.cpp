// multipart/form-data and urlencoded bodies (see form.hpp).
#include "adapters/http_server/form.hpp"

#include "messages/text.hpp"

#include <algorithm>
#include <cctype>

namespace ingestd::http_server {

namespace {

error bad_form(std::string message) {
  return error::make_permanent("http.bad_form", std::move(message));
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return ascii_lower(x) == ascii_lower(y);
         });
}

/// Blanks around a header's or a parameter's parts (a line's CR included).
std::string_view trim(std::string_view s) {
  return trim_blanks(s, " \t\r");
}

/// Splits "value; a=b; c=\"d\"" into the value and its parameters (names lower-cased, quoted
/// values unquoted with backslash escapes removed).
std::pair<std::string, std::vector<std::pair<std::string, std::string>>>
split_parameters(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> params;
  size_t i = text.find(';');
  std::string value{trim(text.substr(0, i))};
  while (i != std::string_view::npos && i < text.size()) {
    ++i; // past ';'
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
      ++i;
    size_t eq = i;
    while (eq < text.size() && text[eq] != '=' && text[eq] != ';')
      ++eq;
    std::string name;
    for (char c : trim(text.substr(i, eq - i)))
      name.push_back(ascii_lower(c));
    if (eq >= text.size() || text[eq] == ';') {
      if (!name.empty())
        params.emplace_back(std::move(name), std::string{});
      i = eq < text.size() ? eq : std::string_view::npos;
      continue;
    }
    size_t j = eq + 1;
    while (j < text.size() && (text[j] == ' ' || text[j] == '\t'))
      ++j;
    std::string v;
    if (j < text.size() && text[j] == '"') {
      ++j;
      while (j < text.size() && text[j] != '"') {
        if (text[j] == '\\' && j + 1 < text.size())
          ++j;
        v.push_back(text[j]);
        ++j;
      }
      if (j < text.size())
        ++j; // closing quote
      i = text.find(';', j);
    } else {
      auto end = text.find(';', j);
      v = std::string{trim(text.substr(j, end == std::string_view::npos ? end : end - j))};
      i = end;
    }
    params.emplace_back(std::move(name), std::move(v));
  }
  return {std::move(value), std::move(params)};
}

bool boundary_char(char c) {
  if (std::isalnum(static_cast<unsigned char>(c)))
    return true;
  return std::string_view{"'()+_,-./:=? "}.find(c) != std::string_view::npos;
}

} // namespace

std::string media_type(std::string_view content_type) {
  auto semi = content_type.find(';');
  std::string out;
  for (char c : trim(content_type.substr(0, semi)))
    if (c != ' ' && c != '\t')
      out.push_back(ascii_lower(c));
  return out;
}

std::optional<std::string> multipart_boundary(std::string_view content_type) {
  if (media_type(content_type) != "multipart/form-data")
    return std::nullopt;
  auto [value, params] = split_parameters(content_type);
  for (auto& [name, v] : params) {
    if (name != "boundary")
      continue;
    if (v.empty() || v.size() > 70 || v.back() == ' '
        || !std::all_of(v.begin(), v.end(), boundary_char))
      return std::nullopt;
    return v;
  }
  return std::nullopt;
}

result<std::vector<form_part>> parse_multipart(std::string_view body, std::string_view boundary,
                                               const form_limits& limits) {
  if (boundary.empty())
    return bad_form("the multipart boundary is empty");
  const std::string delimiter = "--" + std::string{boundary};
  const std::string next_delimiter = "\r\n" + delimiter;
  // The first delimiter: at the start, or after a preamble ending in CRLF.
  size_t pos = 0;
  if (body.substr(0, delimiter.size()) != delimiter) {
    auto found = body.find(next_delimiter);
    if (found == std::string_view::npos)
      return bad_form("the body does not start with the multipart boundary");
    pos = found + 2;
  }
  std::vector<form_part> parts;
  while (true) {
    pos += delimiter.size();
    if (body.substr(pos, 2) == "--")
      return parts; // the closing delimiter; an epilogue is ignored
    // Transport padding, then the line break after the delimiter.
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t'))
      ++pos;
    if (body.substr(pos, 2) == "\r\n")
      pos += 2;
    else if (body.substr(pos, 1) == "\n")
      pos += 1;
    else
      return bad_form("a multipart delimiter is not followed by a line break");
    if (parts.size() == limits.max_parts)
      return bad_form("more than " + std::to_string(limits.max_parts) + " parts");
    // The part's headers, up to an empty line.
    auto window = body.substr(pos, limits.max_part_header_bytes + 4);
    size_t header_end = window.find("\r\n\r\n");
    size_t skip = 4;
    if (window.substr(0, 2) == "\r\n") {
      header_end = 0;
      skip = 2;
    }
    if (header_end == std::string_view::npos || header_end > limits.max_part_header_bytes)
      return bad_form(window.size() > limits.max_part_header_bytes
                          ? "a part's headers are longer than "
                                + std::to_string(limits.max_part_header_bytes) + " bytes"
                          : "a part's headers do not end");
    form_part part;
    bool form_data = false;
    auto headers = body.substr(pos, header_end);
    while (!headers.empty()) {
      auto eol = headers.find("\r\n");
      auto line = headers.substr(0, eol);
      headers = eol == std::string_view::npos ? std::string_view{} : headers.substr(eol + 2);
      auto colon = line.find(':');
      if (colon == std::string_view::npos)
        return bad_form("a part's header line has no ':'");
      auto name = trim(line.substr(0, colon));
      auto value = trim(line.substr(colon + 1));
      if (iequals(name, "Content-Disposition")) {
        auto [disposition, params] = split_parameters(value);
        form_data = iequals(disposition, "form-data");
        for (auto& [key, v] : params) {
          if (key == "name")
            part.name = v;
          else if (key == "filename")
            part.filename = v;
        }
      } else if (iequals(name, "Content-Type")) {
        part.content_type = std::string{value};
      }
    }
    if (!form_data)
      return bad_form("a part has no Content-Disposition: form-data");
    if (part.name.empty())
      return bad_form("a part has no name");
    pos += header_end + skip;
    auto end = body.find(next_delimiter, pos);
    if (end == std::string_view::npos)
      return bad_form("a part is not closed by the boundary");
    part.content.assign(body.data() + pos, end - pos);
    parts.push_back(std::move(part));
    pos = end + 2;
  }
}

std::vector<std::pair<std::string, std::string>> parse_urlencoded(std::string_view text,
                                                                  size_t max_fields) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty() && out.size() < max_fields) {
    auto amp = text.find('&');
    auto pair = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view{} : text.substr(amp + 1);
    if (pair.empty())
      continue;
    auto eq = pair.find('=');
    out.emplace_back(percent_decode(pair.substr(0, eq), true),
                     eq == std::string_view::npos ? std::string{}
                                                  : percent_decode(pair.substr(eq + 1), true));
  }
  return out;
}

} // namespace ingestd::http_server
