// The known-file hash set (deNIST): NSRL-style lists (known_hash_reader) streamed into the
// known_file table with COPY, idempotently; single hashes added by `ingestd known-files add`.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "adapters/db/known_hash_reader.hpp"
#include "adapters/db/pg_connection.hpp"
#include "messages/result.hpp"

namespace ingestd {

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
