// `ingestd migrate`: applies the embedded SQL migrations to the configured database. It refuses
// while a live node (running or draining in the registry) is older than a migration's recorded
// minimum, since that node would break on the new schema: replace it first (deploy/OPERATIONS.md,
// "Rolling upgrade"), or pass --force.
#include <cstdio>

#include "adapters/db/migrator.hpp"
#include "adapters/db/pg_node_repository.hpp"
#include "adapters/support/blocking_call.hpp"
#include "app/cli.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* migrate_usage = R"(Usage: ingestd migrate [--force]

Applies the migrations not yet applied (a no-op when the schema is current). Refuses while a
live node of the registry ('ingestd nodes') runs a version older than a migration needs.

  --force   migrate all the same (those nodes may fail on the new schema)
)";

/// The live nodes older than a migration's minimum, one line each; empty when none (or when the
/// registry cannot be read yet: a schema before migration 006 has no nodes to protect).
std::vector<std::string> nodes_too_old(const std::string& database_url) {
  std::vector<std::string> out;
  std::optional<std::array<int, 3>> needed;
  std::string needed_text, needed_by;
  for (auto& m : embedded_migrations()) {
    auto min = parse_node_version(min_node_version(m));
    if (min && (!needed || *needed < *min)) {
      needed = min;
      needed_text = min_node_version(m);
      needed_by = m.name;
    }
  }
  if (!needed)
    return out;
  pg_node_repository registry{database_url};
  auto nodes
      = blocking_call<std::vector<node_info>>(std::chrono::seconds{30}, "migrate.timeout",
                                              "the database", [&](auto cb) { registry.list(cb); });
  if (!nodes)
    return out;
  for (auto& n : *nodes) {
    if (n.state != "running" && n.state != "draining")
      continue;
    auto version = parse_node_version(n.version);
    if (version && *version >= *needed)
      continue;
    std::string line{"node "};
    line.append(n.id).append(" runs ingestd ").append(n.version).append(", older than ");
    line.append(needed_text).append(" that ").append(needed_by).append(" needs");
    out.push_back(std::move(line));
  }
  return out;
}

} // namespace

int migrate_command(const arguments& args) {
  bool force = false;
  for (auto& a : args.raw) {
    if (a == "-h" || a == "--help") {
      std::fputs(migrate_usage, stdout);
      return ok;
    }
    if (a != "--force") {
      std::fprintf(stderr, "ingestd migrate: unknown argument %s\n%s", a.c_str(), migrate_usage);
      return usage;
    }
    force = true;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  if (auto old = nodes_too_old(cfg->database.url); !old.empty()) {
    for (auto& line : old)
      std::fprintf(stderr, "ingestd migrate: %s%s\n", force ? "warning: " : "", line.c_str());
    if (!force) {
      std::fprintf(
          stderr,
          "ingestd migrate: upgrade those nodes first (deploy/OPERATIONS.md, \"Rolling upgrade\"), "
          "or pass --force\n");
      return failure;
    }
  }
  auto report = migrate(cfg->database.url, embedded_migrations());
  if (!report) {
    std::fprintf(stderr, "ingestd migrate: %s\n", report.error().describe().c_str());
    return failure;
  }
  if (report->applied.empty()) {
    std::printf("schema is current (version %d): nothing to apply\n", report->version);
  } else {
    for (auto& name : report->applied)
      std::printf("applied %s\n", name.c_str());
    std::printf("schema is at version %d\n", report->version);
  }
  return ok;
}

} // namespace ingestd::cli
