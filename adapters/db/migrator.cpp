// migrate(): applies the embedded SQL migrations not yet recorded in schema_migrations, each in its
// own transaction, under a session advisory lock keyed by the schema so migrators take turns.
#include "adapters/db/migrator.hpp"

#include <algorithm>
#include <set>

#include "adapters/db/pg_connection.hpp"

namespace ingestd {

namespace {

constexpr pg::statement current_schema_sql{"ingestd_migrate_schema", "SELECT current_schema()"};
constexpr pg::statement lock_sql{"ingestd_migrate_lock",
                                 "SELECT pg_advisory_lock(1769105, hashtext(current_schema()))"};
constexpr pg::statement unlock_sql{
  "ingestd_migrate_unlock", "SELECT pg_advisory_unlock(1769105, hashtext(current_schema()))"};
constexpr const char* create_table_sql = R"sql(
CREATE TABLE IF NOT EXISTS schema_migrations (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
))sql";
constexpr pg::statement applied_sql{"ingestd_migrate_applied",
                                    "SELECT version FROM schema_migrations ORDER BY version"};
constexpr pg::statement record_sql{
  "ingestd_migrate_record", "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)"};

error in_migration(const error& err, const std::string& name) {
  auto out = err;
  out.message = name + ": " + err.message;
  return out;
}

result<migrate_report> migrate_locked(pg::connection& conn,
                                      const std::vector<migration>& migrations) {
  if (auto res = conn.exec_simple(create_table_sql); !res)
    return res.error();
  auto applied_rows = conn.exec(applied_sql, {});
  if (!applied_rows)
    return applied_rows.error();
  std::set<int> applied;
  for (int r = 0; r < applied_rows->size(); ++r)
    applied.insert(static_cast<int>(applied_rows->i64(r, 0)));

  auto ordered = migrations;
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](auto& a, auto& b) { return a.version < b.version; });
  migrate_report report;
  report.version = applied.empty() ? 0 : *applied.rbegin();
  for (auto& m : ordered) {
    if (applied.contains(m.version))
      continue;
    if (auto res = conn.exec_simple("BEGIN"); !res)
      return in_migration(res.error(), m.name);
    auto body = conn.exec_simple(m.sql);
    if (body)
      body = conn.exec(record_sql, {std::to_string(m.version), m.name});
    if (!body) {
      // The connection may be gone; a ROLLBACK that fails changes nothing either way.
      (void) conn.exec_simple("ROLLBACK");
      return in_migration(body.error(), m.name);
    }
    if (auto res = conn.exec_simple("COMMIT"); !res)
      return in_migration(res.error(), m.name);
    applied.insert(m.version);
    report.applied.push_back(m.name);
    report.version = std::max(report.version, m.version);
  }
  return report;
}

} // namespace

result<migrate_report> migrate(const std::string& database_url,
                               const std::vector<migration>& migrations) {
  // Migrations may rightly run long and wait for other migrators: no statement deadline.
  pg::connection conn{database_url, pg::session_options::tcp_only()};
  if (auto ok = conn.ensure(); !ok)
    return ok.error();
  auto schema = conn.exec(current_schema_sql, {});
  if (!schema)
    return schema.error();
  if (schema->size() == 0 || schema->is_null(0, 0))
    return error::make_permanent("pg.no_schema",
                                 "no schema of the search_path exists; create it first");
  if (auto res = conn.exec(lock_sql, {}); !res)
    return res.error();
  auto report = migrate_locked(conn, migrations);
  // Closing the session releases the lock too; unlock explicitly to hand over at once.
  (void) conn.exec(unlock_sql, {});
  return report;
}

} // namespace ingestd
