// known_hash_reader and pg_known_files: the import is one transaction that COPYs the lines'
// hashes into a temporary table, then merges them into known_file (ON CONFLICT DO NOTHING).
#include "adapters/db/pg_known_files.hpp"

#include <algorithm>
#include <cctype>

#include <libpq-fe.h>

#include "adapters/db/pg_values.hpp"

namespace ingestd {

namespace {

using pg::param;

constexpr pg::statement add_sql{"ingestd_known_files_add", R"sql(
INSERT INTO known_file (hash, algorithm, source)
SELECT DISTINCT ON (h.hash) h.hash, h.algorithm, h.source
  FROM unnest($1::text[], $2::text[], $3::text[]) AS h(hash, algorithm, source)
 ORDER BY h.hash
ON CONFLICT (hash) DO NOTHING
)sql"};

constexpr pg::statement count_sql{"ingestd_known_files_count", "SELECT count(*) FROM known_file"};

constexpr const char* stage_sql = "CREATE TEMPORARY TABLE known_file_import (hash text COLLATE "
                                  "\"C\", algorithm text) ON COMMIT DROP";
// The merge sorts millions of hashes: in memory rather than in many temporary files.
constexpr const char* work_mem_sql = "SET LOCAL work_mem = '256MB'";
constexpr const char* copy_sql = "COPY known_file_import (hash, algorithm) FROM STDIN";

// The anti-join leaves out what the set holds before the insert (a second import of a list costs
// a merge, not a million speculative insertions); ON CONFLICT covers a concurrent import.
constexpr pg::statement merge_sql{"ingestd_known_files_merge", R"sql(
INSERT INTO known_file (hash, algorithm, source)
SELECT i.hash, i.algorithm, $1
  FROM (SELECT DISTINCT ON (hash) hash, algorithm FROM known_file_import ORDER BY hash) AS i
 WHERE NOT EXISTS (SELECT 1 FROM known_file AS k WHERE k.hash = i.hash)
ON CONFLICT (hash) DO NOTHING
)sql"};

/// Hashes per COPY chunk handed to libpq.
constexpr size_t chunk_hashes = 20000;

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

pg_known_files::pg_known_files(std::string database_url)
    : conn_(std::move(database_url), pg::session_options::tcp_only()) {}

result<known_files_import_report> pg_known_files::import(std::istream& in,
                                                         const std::string& source) {
  if (auto c = conn_.ensure(true); !c)
    return c.error();
  known_files_import_report report;
  auto rollback = [&](error e) -> result<known_files_import_report> {
    if (conn_.raw() != nullptr && PQtransactionStatus(conn_.raw()) != PQTRANS_IDLE)
      (void)conn_.exec_simple("ROLLBACK");
    return e;
  };
  for (const char* sql : {"BEGIN", work_mem_sql, stage_sql})
    if (auto r = conn_.exec_simple(sql); !r)
      return rollback(r.error());
  ::PGresult* started = PQexec(conn_.raw(), copy_sql);
  if (PQresultStatus(started) != PGRES_COPY_IN) {
    auto err = pg::classify(started, conn_.raw(), "known_files.copy");
    PQclear(started);
    return rollback(err);
  }
  PQclear(started);
  known_hash_reader reader{in};
  std::vector<known_hash> batch;
  std::string buf;
  result<void> failed;
  for (;;) {
    batch.clear();
    auto more = reader.next(batch, chunk_hashes);
    if (!more) {
      failed = more.error();
      break;
    }
    buf.clear();
    for (auto& h : batch) {
      buf += h.hash;
      buf += '\t';
      buf += h.algorithm;
      buf += '\n';
    }
    report.hashes += static_cast<int64_t>(batch.size());
    if (!buf.empty() && PQputCopyData(conn_.raw(), buf.data(), static_cast<int>(buf.size())) != 1) {
      failed = pg::classify(nullptr, conn_.raw(), "known_files.copy");
      break;
    }
    if (!*more)
      break;
  }
  report.lines = reader.lines();
  // A bad line ends the COPY with an error: the server drops what it received.
  PQputCopyEnd(conn_.raw(), failed ? nullptr : "the input had a bad line");
  bool copy_ok = true;
  error copy_error;
  while (::PGresult* res = PQgetResult(conn_.raw())) {
    if (PQresultStatus(res) != PGRES_COMMAND_OK && copy_ok) {
      copy_ok = false;
      copy_error = pg::classify(res, conn_.raw(), "known_files.copy");
    }
    PQclear(res);
  }
  if (!failed)
    return rollback(failed.error());
  if (!copy_ok)
    return rollback(copy_error);
  auto merged = conn_.exec(merge_sql, {pg::clean(source)});
  if (!merged)
    return rollback(merged.error());
  report.added = merged->affected();
  if (auto r = conn_.exec_simple("COMMIT"); !r)
    return rollback(r.error());
  return report;
}

result<int64_t> pg_known_files::add(const std::vector<known_hash>& hashes,
                                    const std::vector<std::string>& sources) {
  if (auto c = conn_.ensure(true); !c)
    return c.error();
  std::vector<param> h, a, s;
  for (size_t i = 0; i < hashes.size(); ++i) {
    auto algorithm = known_hash_algorithm(hashes[i].hash);
    if (!algorithm || *algorithm != hashes[i].algorithm)
      return error::make_permanent("known_files.bad_hash", describe_value(hashes[i].hash)
                                                               + " is not a " + hashes[i].algorithm
                                                               + " hash");
    h.emplace_back(lower(hashes[i].hash));
    a.emplace_back(hashes[i].algorithm);
    s.push_back(i < sources.size() ? pg::opt_clean(sources[i]) : param{});
  }
  auto res
      = conn_.exec(add_sql, {pg::array_literal(h), pg::array_literal(a), pg::array_literal(s)});
  if (!res)
    return res.error();
  return res->affected();
}

result<int64_t> pg_known_files::count() {
  if (auto c = conn_.ensure(true); !c)
    return c.error();
  auto res = conn_.exec(count_sql, {});
  if (!res)
    return res.error();
  return res->i64(0, 0);
}

} // namespace ingestd
