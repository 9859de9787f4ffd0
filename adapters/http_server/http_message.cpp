// Look-ups on the request and response (see http_message.hpp).
#include "adapters/http_server/http_message.hpp"

#include <algorithm>
#include <cctype>

#include "adapters/http_server/form.hpp"

namespace ingestd::http_server {

bool case_insensitive_less::operator()(std::string_view a, std::string_view b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x))
           < std::tolower(static_cast<unsigned char>(y));
  });
}

bool request::has_header(std::string_view name) const {
  return headers.find(name) != headers.end();
}

std::string request::get_header_value(std::string_view name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string{} : it->second;
}

bool request::has_param(std::string_view name) const {
  return params.find(name) != params.end();
}

std::string request::get_param_value(std::string_view name) const {
  auto it = params.find(name);
  return it == params.end() ? std::string{} : it->second;
}

bool request::is_multipart_form_data() const {
  return media_type(get_header_value("Content-Type")) == "multipart/form-data";
}

bool request::has_file(std::string_view name) const {
  return files.find(name) != files.end();
}

form_part request::get_file_value(std::string_view name) const {
  auto it = files.find(name);
  return it == files.end() ? form_part{} : it->second;
}

void response::set_header(std::string_view name, std::string value) {
  auto [from, to] = headers.equal_range(name);
  headers.erase(from, to);
  headers.emplace(std::string{name}, std::move(value));
}

bool response::has_header(std::string_view name) const {
  return headers.find(name) != headers.end();
}

std::string response::get_header_value(std::string_view name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string{} : it->second;
}

void response::set_content(std::string content, std::string_view content_type) {
  body = std::move(content);
  set_header("Content-Type", std::string{content_type});
}

} // namespace ingestd::http_server
