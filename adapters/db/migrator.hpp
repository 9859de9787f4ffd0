// Schema migrations: numbered SQL files from config/migrations/, embedded in the binary at build
// time, applied in order by `ingestd migrate`, each in a transaction, recorded in
// schema_migrations. Applying them again is a no-op.
#pragma once

#include <string>
#include <vector>

#include "messages/result.hpp"

namespace ingestd {

struct migration {
  int version = 0;
  /// The file name, e.g. "001_initial.sql".
  std::string name;
  std::string sql;
};

/// The migrations of config/migrations/, ordered by version (generated at build time).
const std::vector<migration>& embedded_migrations();

struct migrate_report {
  /// Names of the migrations applied by this call (empty when the schema was current).
  std::vector<std::string> applied;
  /// The highest version now applied.
  int version = 0;
};

/// Applies the migrations not yet recorded, each in its own transaction, holding an advisory
/// lock so that concurrent migrators take turns. Blocking: call from a CLI or a test thread.
result<migrate_report> migrate(const std::string& database_url,
                               const std::vector<migration>& migrations);

} // namespace ingestd
