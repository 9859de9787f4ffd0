// `ingestd batches [BATCH_ID]`: the batches of submissions (`ingestd submit --batch NAME`, the
// HTTP intake's X-Batch) with their state and the counts of their ingestions, children included.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "adapters/db/pg_intake_repository.hpp"
#include "app/cli.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* batches_usage = R"(Usage: ingestd batches [--tenant T] [--limit N] [--json]
       ingestd batches BATCH_ID [--json]

The batches of submissions, newest first (of one tenant with --tenant; at most N, default 50),
or one batch. A batch is open while documents are added to it, sealed when its submitter is
done, and finished once sealed with none of its ingestions (container children included) in
progress; its BATCH_FINISHED event carries the counts shown here. `ingestd cancel --batch ID`
cancels what of it is not finished.

  --json   one JSON object per batch, one per line (the BATCH_FINISHED payload's fields)

Exit codes: 0 listed or found, 1 the batch is unknown or the database could not be reached,
2 usage error.
)";

void print_table(const std::vector<batch_info>& batches) {
  std::printf("%-36s  %-9s %6s %6s %6s %6s %6s %6s %6s %6s  %s\n", "BATCH", "STATE", "DOCS", "OPEN",
              "DONE", "REVIEW", "FAILED", "SKIP", "CANCEL", "DUP", "NAME");
  for (const auto& b : batches)
    std::printf("%-36s  %-9s %6lld %6lld %6lld %6lld %6lld %6lld %6lld %6lld  %s\n",
                b.id.str().c_str(), b.state.c_str(), static_cast<long long>(b.documents),
                static_cast<long long>(b.in_progress), static_cast<long long>(b.completed),
                static_cast<long long>(b.for_review), static_cast<long long>(b.failed),
                static_cast<long long>(b.skipped), static_cast<long long>(b.cancelled),
                static_cast<long long>(b.duplicates), b.name.c_str());
}

} // namespace

int batches_command(const arguments& args) {
  bool json = false;
  std::optional<uuid> tenant;
  std::optional<uuid> id;
  int limit = 50;
  auto& raw = args.raw;
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto& a = raw[i];
    if (a == "-h" || a == "--help") {
      std::fputs(batches_usage, stdout);
      return ok;
    }
    if (a == "--json") {
      json = true;
    } else if ((a == "--tenant" || a == "--limit") && i + 1 < raw.size()) {
      const auto& v = raw[++i];
      if (a == "--tenant") {
        tenant = uuid::parse(v);
        if (!tenant) {
          std::fprintf(stderr, "ingestd batches: --tenant '%s' is not a UUID\n", v.c_str());
          return usage;
        }
      } else {
        limit = std::atoi(v.c_str());
        if (limit < 1 || limit > 10000) {
          std::fputs("ingestd batches: --limit must be 1..10000\n", stderr);
          return usage;
        }
      }
    } else if (a.rfind("--", 0) == 0 || id) {
      std::fprintf(stderr, "ingestd batches: unexpected %s\n%s", a.c_str(), batches_usage);
      return usage;
    } else if (!(id = uuid::parse(a))) {
      std::fprintf(stderr, "ingestd batches: '%s' is not a batch id (a UUID)\n", a.c_str());
      return usage;
    }
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  pg_intake_repository db{cfg->database.url};
  constexpr std::chrono::seconds timeout{30};
  std::vector<batch_info> batches;
  if (id) {
    auto found = db.find_batch(*id, tenant, timeout);
    if (!found) {
      std::fprintf(stderr, "ingestd batches: database: %s\n", found.error().describe().c_str());
      return failure;
    }
    if (!*found) {
      std::fprintf(stderr, "ingestd batches: no batch %s\n", id->str().c_str());
      return failure;
    }
    batches.push_back(std::move(**found));
  } else {
    auto listed = db.list_batches(tenant, limit, timeout);
    if (!listed) {
      std::fprintf(stderr, "ingestd batches: database: %s\n", listed.error().describe().c_str());
      return failure;
    }
    batches = std::move(*listed);
  }
  if (json) {
    for (const auto& b : batches)
      std::printf("%s\n", b.json.c_str());
  } else {
    print_table(batches);
  }
  return ok;
}

} // namespace ingestd::cli
