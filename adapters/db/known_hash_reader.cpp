// known_hash_reader: the hash lists' lines (CSV fields, quoted or not, or a bare hash) parsed
// into hashes, each error naming its line.
#include "adapters/db/known_hash_reader.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace ingestd {

namespace {

std::string lower(std::string_view s) {
  std::string out{s};
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

/// A CSV line's fields; a quoted field may hold commas and doubled quotes.
std::vector<std::string> csv_fields(std::string_view line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::string{trim(field)});
      field.clear();
    } else {
      field += c;
    }
  }
  out.push_back(std::string{trim(field)});
  return out;
}

error bad_line(int64_t line_no, const std::string& why) {
  return error::make_permanent("known_files.bad_line",
                               "line " + std::to_string(line_no) + ": " + why);
}

std::string describe_value(std::string_view v) {
  auto shown = v.substr(0, 80);
  return "\"" + std::string{shown} + (v.size() > shown.size() ? "...\"" : "\"");
}

} // namespace

std::optional<std::string> known_hash_algorithm(std::string_view hex) {
  if (!std::all_of(hex.begin(), hex.end(), [](unsigned char c) { return std::isxdigit(c) != 0; }))
    return std::nullopt;
  if (hex.size() == 32)
    return std::string{"md5"};
  if (hex.size() == 64)
    return std::string{"sha256"};
  return std::nullopt;
}

result<known_hash> checked_known_hash(const known_hash& h) {
  auto algorithm = known_hash_algorithm(h.hash);
  if (!algorithm || *algorithm != h.algorithm)
    return error::make_permanent("known_files.bad_hash",
                                 describe_value(h.hash) + " is not a " + h.algorithm + " hash");
  return known_hash{lower(h.hash), h.algorithm};
}

result<void> known_hash_reader::header_or_first(const std::string& line,
                                                std::vector<known_hash>& out) {
  auto fields = csv_fields(line);
  bool header = false;
  for (size_t i = 0; i < fields.size(); ++i) {
    auto name = lower(fields[i]);
    name.erase(
        std::remove_if(name.begin(), name.end(), [](char c) { return c == '-' || c == '_'; }),
        name.end());
    if (name == "md5") {
      md5_col_ = i;
      header = true;
    } else if (name == "sha256") {
      sha256_col_ = i;
      header = true;
    } else if (!fields[i].empty() && !known_hash_algorithm(fields[i]) && name != "sha1" && i == 0
               && fields.size() > 1) {
      header = true; // a header with other names first; hash columns may follow
    }
  }
  if (header) {
    if (!md5_col_ && !sha256_col_)
      return bad_line(line_no_, "the header names no MD5 or SHA-256 column (e.g. \"MD5\", "
                                "\"SHA-256\", \"sha256\")");
    return {};
  }
  return parse_line(line, out);
}

result<void> known_hash_reader::parse_line(const std::string& line, std::vector<known_hash>& out) {
  if (!md5_col_ && !sha256_col_) {
    std::string_view v = trim(line);
    v = v.substr(0, v.find_first_of(" \t,"));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"')
      v = v.substr(1, v.size() - 2);
    auto algorithm = known_hash_algorithm(v);
    if (!algorithm) {
      if (v.size() == 40
          && std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isxdigit(c) != 0; }))
        return bad_line(line_no_, describe_value(v)
                                      + " is a SHA-1; the set holds MD5 and SHA-256 "
                                        "(give a CSV file with an MD5 or SHA-256 column)");
      return bad_line(line_no_, describe_value(v)
                                    + " is neither an MD5 (32 hex digits) nor a "
                                      "SHA-256 (64 hex digits)");
    }
    out.push_back({lower(v), *algorithm});
    return {};
  }
  auto fields = csv_fields(line);
  for (auto [col, expected] : {std::pair{md5_col_, "md5"}, std::pair{sha256_col_, "sha256"}}) {
    if (!col)
      continue;
    if (*col >= fields.size())
      return bad_line(line_no_, "it has " + std::to_string(fields.size()) + " fields; the header's "
                                    + expected + " column is number " + std::to_string(*col + 1));
    auto& v = fields[*col];
    if (v.empty())
      continue;
    auto algorithm = known_hash_algorithm(v);
    if (!algorithm || *algorithm != expected)
      return bad_line(line_no_,
                      describe_value(v) + " in the " + expected + " column is not "
                          + (std::string_view{expected} == "md5" ? "an MD5 (32 hex digits)"
                                                                 : "a SHA-256 (64 hex digits)"));
    out.push_back({lower(v), *algorithm});
  }
  return {};
}

result<bool> known_hash_reader::next(std::vector<known_hash>& out, size_t want) {
  std::string line;
  while (out.size() < want) {
    if (!std::getline(in_, line))
      return false;
    ++line_no_;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line_no_ == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0)
      line.erase(0, 3); // a byte-order mark
    auto t = trim(line);
    if (t.empty() || t.front() == '#')
      continue;
    auto r = started_ ? parse_line(line, out) : header_or_first(line, out);
    started_ = true;
    if (!r)
      return r.error();
  }
  return true;
}

} // namespace ingestd
