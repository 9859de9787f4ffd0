// `ingestd migrate`: applies the embedded SQL migrations to the configured database.
#include <cstdio>

#include "adapters/db/migrator.hpp"
#include "app/cli.hpp"

namespace ingestd::cli {

int migrate_command(const arguments& args) {
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
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
