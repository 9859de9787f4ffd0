// The known-file hash set (deNIST): NSRL-style lists parsed line by line and streamed into the
// known_file table with COPY, idempotently; single hashes added by `ingestd known-files add`.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/db/pg_connection.hpp"
#include "messages/result.hpp"

namespace ingestd {

/// One hash of the set: lower-case hex, with its algorithm ("md5" or "sha256").
struct known_hash {
  std::string hash;
  std::string algorithm;
};

/// "md5" for 32 hex digits, "sha256" for 64 (either case), nullopt for anything else.
std::optional<std::string> known_hash_algorithm(std::string_view hex);

/// Reads a hash list line by line: either a CSV file whose first line is a header naming an MD5
/// and/or a SHA-256 column (NSRL's "SHA-1","MD5",... or "sha256","sha1","md5",...; quoted or
/// not), or a plain list of one MD5 or SHA-256 per line (anything after the first space, tab or
/// comma ignored). Empty lines and lines starting with '#' are skipped. Errors name the line.
class known_hash_reader {
public:
  explicit known_hash_reader(std::istream& in) : in_(in) {}

  /// Appends the hashes of the next line(s) to `out` until it holds at least `want` or the input
  /// ends; false at the end. An unreadable line is an error ("known_files.bad_line").
  result<bool> next(std::vector<known_hash>& out, size_t want);

  int64_t lines() const { return line_no_; }

private:
  result<void> header_or_first(const std::string& line, std::vector<known_hash>& out);
  result<void> parse_line(const std::string& line, std::vector<known_hash>& out);

  std::istream& in_;
  int64_t line_no_ = 0;
  bool started_ = false;
  /// CSV columns (0-based) of the hashes; both unset for a plain list.
  std::optional<size_t> md5_col_;
  std::optional<size_t> sha256_col_;
};

struct known_files_import_report {
  /// Lines read (header and comments included).
  int64_t lines = 0;
  /// Hashes read.
  int64_t hashes = 0;
  /// Hashes that were new to the set.
  int64_t added = 0;
};

/// Blocking, for the command line (one connection, no statement deadline: an import of millions
/// of lines may run for a while).
class pg_known_files {
public:
  explicit pg_known_files(std::string database_url);

  /// Streams every hash of `in` into the set in one transaction (nothing is kept when a line is
  /// bad); hashes already there are left alone, so running it again adds nothing.
  result<known_files_import_report> import(std::istream& in, const std::string& source);

  /// Adds the hashes (`source`: where each came from, same order); answers how many were new.
  result<int64_t> add(const std::vector<known_hash>& hashes,
                      const std::vector<std::string>& sources);

  /// How many hashes the set holds.
  result<int64_t> count();

private:
  pg::connection conn_;
};

} // namespace ingestd
