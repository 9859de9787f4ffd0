#include "intake/manifest.hpp"

#include <algorithm>

#include <rapidjson/document.h>

#include "messages/text.hpp"

namespace ingestd {

namespace {

struct raw_row {
  size_t line = 0;
  std::vector<std::string> fields;
  std::string error;
};

/// Splits `text` into rows of fields. A quote that is never closed ends the text as an error
/// of its row.
std::vector<raw_row> split(std::string_view text) {
  std::vector<raw_row> rows;
  size_t line = 1;
  size_t i = 0;
  while (i < text.size()) {
    raw_row row;
    row.line = line;
    std::string field;
    bool quoted = false;
    bool was_quoted = false;
    bool end_of_row = false;
    while (i < text.size() && !end_of_row) {
      char c = text[i];
      if (quoted) {
        if (c == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          quoted = false;
          ++i;
          continue;
        }
        if (c == '\n')
          ++line;
        field += c;
        ++i;
        continue;
      }
      if (c == '"' && field.empty() && !was_quoted) {
        quoted = true;
        was_quoted = true;
        ++i;
      } else if (c == ',') {
        row.fields.push_back(std::move(field));
        field.clear();
        was_quoted = false;
        ++i;
      } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
        ++i;
      } else if (c == '\n') {
        ++line;
        ++i;
        end_of_row = true;
      } else {
        if (c == '"' && row.error.empty())
          row.error = "a quote inside an unquoted field (quote the field and double the quote)";
        field += c;
        ++i;
      }
    }
    if (quoted && row.error.empty())
      row.error = "a quoted field is not closed";
    row.fields.push_back(std::move(field));
    bool blank = row.fields.size() == 1 && row.fields.front().empty() && row.error.empty();
    if (!blank)
      rows.push_back(std::move(row));
  }
  return rows;
}

std::string trimmed(std::string s) {
  auto not_space = [](char c) { return c != ' ' && c != '\t'; };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

bool is_utf8(std::string_view s) {
  return clean_text(s) == s;
}

} // namespace

result<std::vector<std::pair<std::string, std::string>>>
parse_metadata_json(std::string_view json, const manifest_limits& limits) {
  auto refuse = [](const std::string& why) {
    return error::make_permanent("intake.invalid_metadata", "metadata: " + why);
  };
  // Every member at its limits, with its quotes, colon and comma (a whole row of a manifest).
  auto most = limits.max_columns * (limits.max_name_bytes + limits.max_value_bytes + 8) + 2;
  if (json.size() > most)
    return refuse("more than " + std::to_string(most) + " bytes");
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject())
    return refuse(R"(not a JSON object of text values, such as {"po_number":"4711"})");
  if (doc.MemberCount() > limits.max_columns)
    return refuse(std::to_string(doc.MemberCount()) + " members; the limit is "
                  + std::to_string(limits.max_columns));
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<std::string> names;
  for (const auto& m : doc.GetObject()) {
    std::string name{m.name.GetString(), m.name.GetStringLength()};
    if (name.empty() || name.size() > limits.max_name_bytes || !is_utf8(name))
      return refuse("a name is not " + std::to_string(limits.max_name_bytes)
                    + " bytes of UTF-8 or fewer");
    if (std::find(names.begin(), names.end(), name) != names.end())
      return refuse("\"" + name + "\" is named twice");
    names.push_back(name);
    if (!m.value.IsString())
      return refuse("the value of \"" + name + "\" is not text (a JSON string)");
    std::string value{m.value.GetString(), m.value.GetStringLength()};
    if (value.size() > limits.max_value_bytes)
      return refuse("the value of \"" + name + "\" is longer than "
                    + std::to_string(limits.max_value_bytes) + " bytes");
    if (!is_utf8(value))
      return refuse("the value of \"" + name + "\" is not UTF-8 text without NUL");
    if (!value.empty())
      out.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

result<std::vector<manifest_row>> parse_manifest(std::string_view text,
                                                 const manifest_limits& limits) {
  auto refuse
      = [](const std::string& why) { return error::make_permanent("intake.manifest", why); };
  if (text.size() > limits.max_bytes)
    return refuse("the manifest has " + std::to_string(text.size()) + " bytes; the limit is "
                  + std::to_string(limits.max_bytes));
  if (text.substr(0, 3) == "\xEF\xBB\xBF")
    text.remove_prefix(3);
  auto rows = split(text);
  if (rows.empty())
    return refuse("the manifest is empty: its first line names the columns, one of them path");
  auto& header = rows.front();
  if (!header.error.empty())
    return refuse("line 1 (the header): " + header.error);
  if (header.fields.size() > limits.max_columns)
    return refuse("the header has " + std::to_string(header.fields.size())
                  + " columns; the limit is " + std::to_string(limits.max_columns));
  std::vector<std::string> names;
  size_t path_column = header.fields.size();
  for (size_t c = 0; c < header.fields.size(); ++c) {
    auto name = trimmed(header.fields[c]);
    if (name.empty())
      return refuse("the header's column " + std::to_string(c + 1) + " has no name");
    if (name.size() > limits.max_name_bytes || !is_utf8(name))
      return refuse("the header's column " + std::to_string(c + 1) + " is not a name of at most "
                    + std::to_string(limits.max_name_bytes) + " bytes of UTF-8");
    if (std::find(names.begin(), names.end(), name) != names.end())
      return refuse("the header names the column \"" + name + "\" twice");
    if (name == "path")
      path_column = c;
    names.push_back(std::move(name));
  }
  if (path_column == header.fields.size())
    return refuse("the header has no column \"path\" (the file of each row)");

  std::vector<manifest_row> out;
  out.reserve(rows.size() - 1);
  for (size_t r = 1; r < rows.size(); ++r) {
    auto& raw = rows[r];
    manifest_row row;
    row.line = raw.line;
    row.error = raw.error;
    // Named by its path in reports, even when refused.
    if (path_column < raw.fields.size())
      row.path = trimmed(raw.fields[path_column]);
    if (row.error.empty() && raw.fields.size() != names.size())
      row.error = "it has " + std::to_string(raw.fields.size()) + " fields; the header has "
                  + std::to_string(names.size());
    for (size_t c = 0; row.error.empty() && c < raw.fields.size(); ++c) {
      auto& value = raw.fields[c];
      if (value.size() > limits.max_value_bytes)
        row.error = "the value of " + names[c] + " is longer than "
                    + std::to_string(limits.max_value_bytes) + " bytes";
      else if (!is_utf8(value))
        row.error = "the value of " + names[c] + " is not UTF-8 text";
      else if (c != path_column && !value.empty())
        row.metadata.emplace_back(names[c], value);
    }
    if (row.error.empty() && row.path.empty())
      row.error = "its path is empty";
    out.push_back(std::move(row));
  }
  return out;
}

} // namespace ingestd
