// migrate(): applies the embedded SQL migrations not yet recorded in schema_migrations, each in its
// own transaction, under a session advisory lock keyed by the schema so migrators take turns.
#include "adapters/db/migrator.hpp"

#include <algorithm>
#include <set>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_values.hpp"

namespace ingestd {

namespace {

constexpr pg::statement current_schema_sql{"ingestd_migrate_schema", "SELECT current_schema()"};
constexpr pg::statement migration_lock_sql{
    "ingestd_migrate_lock", "SELECT pg_advisory_lock(1769105, hashtext(current_schema()))"};
constexpr pg::statement migration_unlock_sql{
    "ingestd_migrate_unlock", "SELECT pg_advisory_unlock(1769105, hashtext(current_schema()))"};
constexpr const char* create_table_sql = R"sql(
CREATE TABLE IF NOT EXISTS schema_migrations (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
))sql";
// Added to tables made before the minimums were recorded.
constexpr const char* add_minimum_sql
    = "ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS min_node_version text";
constexpr pg::statement applied_sql{"ingestd_migrate_applied",
                                    "SELECT version FROM schema_migrations ORDER BY version"};
constexpr pg::statement record_sql{
    "ingestd_migrate_record",
    "INSERT INTO schema_migrations (version, name, min_node_version) VALUES ($1, $2, $3)"};
constexpr pg::statement has_minimums_sql{"ingestd_migrate_has_minimums", R"sql(
SELECT count(*) FROM information_schema.columns
 WHERE table_schema = current_schema() AND table_name = 'schema_migrations'
   AND column_name = 'min_node_version'
)sql"};
constexpr pg::statement minimums_sql{
    "ingestd_migrate_minimums",
    "SELECT name, min_node_version FROM schema_migrations WHERE min_node_version IS NOT NULL "
    "ORDER BY version"};
constexpr std::string_view header_key = "-- ingestd-min-node-version:";

error in_migration(const error& err, const std::string& name) {
  auto out = err;
  out.message = name + ": " + err.message;
  return out;
}

result<migrate_report> migrate_locked(pg::connection& conn,
                                      const std::vector<migration>& migrations) {
  if (auto res = conn.exec_simple(create_table_sql); !res)
    return res.error();
  if (auto res = conn.exec_simple(add_minimum_sql); !res)
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
      body = conn.exec(record_sql,
                       {std::to_string(m.version), m.name, pg::opt_text(min_node_version(m))});
    if (!body) {
      // The connection may be gone; a ROLLBACK that fails changes nothing either way.
      (void)conn.exec_simple("ROLLBACK");
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

std::string min_node_version(const migration& m) {
  std::string_view rest = m.sql;
  while (!rest.empty()) {
    auto end = rest.find('\n');
    auto line = rest.substr(0, end);
    if (line.rfind("--", 0) != 0)
      break; // the header is among the leading comment lines only
    if (line.rfind(header_key, 0) == 0) {
      auto value = line.substr(header_key.size());
      auto first = value.find_first_not_of(" \t");
      auto last = value.find_last_not_of(" \t\r");
      return first == std::string_view::npos ? std::string{}
                                             : std::string{value.substr(first, last - first + 1)};
    }
    if (end == std::string_view::npos)
      break;
    rest.remove_prefix(end + 1);
  }
  return {};
}

std::optional<std::array<int, 3>> parse_node_version(std::string_view text) {
  if (auto cut = text.find_first_of("-+"); cut != std::string_view::npos)
    text = text.substr(0, cut);
  std::array<int, 3> out{};
  for (size_t i = 0; i < out.size(); ++i) {
    auto dot = text.find('.');
    auto part = text.substr(0, dot);
    if (part.empty() || part.size() > 6 || (i < 2) != (dot != std::string_view::npos))
      return std::nullopt;
    int n = 0;
    for (char c : part) {
      if (c < '0' || c > '9')
        return std::nullopt;
      n = n * 10 + (c - '0');
    }
    out[i] = n;
    text = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  }
  return out;
}

result<void> check_node_version(const std::string& database_url, std::string_view node_version) {
  auto own = parse_node_version(node_version);
  if (!own) {
    std::string message{"this node's version \""};
    message.append(node_version).append("\" is not X.Y.Z");
    return error::make_permanent("node.version", std::move(message));
  }
  // The session's default deadlines: a node that cannot read the table in time does not start.
  pg::connection conn{database_url, pg::session_options{}};
  if (auto ok = conn.ensure(); !ok)
    return ok.error();
  auto has = conn.exec(has_minimums_sql, {});
  if (!has)
    return has.error();
  if (has->i64(0, 0) == 0)
    return {};
  auto rows = conn.exec(minimums_sql, {});
  if (!rows)
    return rows.error();
  for (int r = 0; r < rows->size(); ++r) {
    auto name = rows->str(r, 0);
    auto needed = rows->str(r, 1);
    auto min = parse_node_version(needed);
    if (min && *own >= *min)
      continue;
    std::string message;
    if (!min) {
      message.append("the database schema's migration ")
          .append(name)
          .append(" needs node version \"");
      message.append(needed).append("\", which this node cannot read: upgrade this node");
    } else {
      message.append("the database schema needs ingestd ")
          .append(needed)
          .append(" or newer (migration ");
      message.append(name).append("); this node is ").append(node_version);
      message.append(": upgrade this node (deploy/OPERATIONS.md, \"Rolling upgrade\")");
    }
    return error::make_permanent("node.too_old", std::move(message));
  }
  return {};
}

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
  if (auto res = conn.exec(migration_lock_sql, {}); !res)
    return res.error();
  auto report = migrate_locked(conn, migrations);
  // Closing the session releases the lock too; unlock explicitly to hand over at once.
  (void)conn.exec(migration_unlock_sql, {});
  return report;
}

} // namespace ingestd
