// Schema migrations: numbered SQL files from config/migrations/, embedded in the binary at build
// time, applied in order by `ingestd migrate`, each in a transaction, recorded in
// schema_migrations with the oldest node version it stays compatible with. Applying them again is
// a no-op.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
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

/// The oldest node version a migration stays compatible with: its header line
/// "-- ingestd-min-node-version: X.Y.Z" among the comment lines it starts with; "" when it has
/// none (an additive migration keeps every node running).
std::string min_node_version(const migration& m);

/// "X.Y.Z" (a suffix after '-' or '+' ignored) as numbers; nullopt when it is not one.
std::optional<std::array<int, 3>> parse_node_version(std::string_view text);

/// Whether the schema of `database_url` lets a node of `node_version` run: a permanent error
/// "node.too_old" naming the migration and the version it needs when an applied migration
/// recorded a newer minimum. A database without migrations, or migrated before minimums were
/// recorded, lets every node run. Blocking: call before the actors start.
result<void> check_node_version(const std::string& database_url, std::string_view node_version);

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
