// The known-file hash lists as `ingestd known-files` reads them (NSRL-style CSV or one hash per
// line), without a database: pg_known_files streams what the reader yields into the set.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/result.hpp"

namespace ingestd {

/// One hash of the set: lower-case hex, with its algorithm ("md5" or "sha256").
struct known_hash {
  std::string hash;
  std::string algorithm;
};

/// "md5" for 32 hex digits, "sha256" for 64 (either case), nullopt for anything else.
std::optional<std::string> known_hash_algorithm(std::string_view hex);

/// `h` lower-cased, when its hash is one of its algorithm; else "known_files.bad_hash".
result<known_hash> checked_known_hash(const known_hash& h);

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

} // namespace ingestd
