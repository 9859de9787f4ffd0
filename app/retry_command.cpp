// `ingestd retry ID... | --failed`: runs failed work again, each item from the start of its own
// stage, keeping what earlier stages produced (a failed matching is matched again without OCR).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "app/cli.hpp"
#include "stages/registry.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* retry_usage = R"(Usage: ingestd retry [--json] ID...
       ingestd retry --failed [--stage STAGE] [--since TIME] [--limit N] [--json]

Runs failed work again, each from the start of the stage that failed, keeping what the earlier
stages produced: an ingestion whose transcription or extraction failed is ingested again (stage
ingest), a container whose unpacking failed is unpacked again (unpack), a document whose matching
failed is matched again from its stored extraction, without OCR (match). Each item starts over
with no attempts and a new queue message, in one transaction with an audit row (step "retry")
and a RETRY_REQUESTED event; a running node takes it like any other work.

  ID          an ingestion id (the ingestion if it failed, else its document's matching if that
              failed) or a document id (every failed stage of the document)
  --failed    every failed item
  --stage S   only stage S: ingest, unpack or match
  --since T   only items that failed at or after T: a time (2026-11-25, 2026-11-25T08:00:00Z)
              or an age (90m, 12h, 7d)
  --limit N   at most N items, oldest failure first (default 1000; run again for more)
  --json      one JSON object per item: id, stage, document_id, retried, error

An item whose stage is not enabled here (stages.enabled) is left failed and reported.
Exit codes: 0 every item found was retried (with --failed, also when none had failed); 1 an ID
has no failed stage, an item's stage is not enabled, or the database could not be reached;
2 usage error.
)";

std::string json_line(const retried_item& item) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  auto id = item.id.str();
  auto document = item.document_id.str();
  w.StartObject();
  w.Key("id");
  w.String(id.c_str());
  w.Key("stage");
  w.String(item.stage.c_str());
  w.Key("document_id");
  w.String(document.c_str());
  w.Key("retried");
  w.Bool(item.sent);
  w.Key("error");
  w.String(item.last_error.c_str());
  w.EndObject();
  return buf.GetString();
}

} // namespace

int retry_command(const arguments& args) {
  retry_request req;
  bool json = false;
  bool all_failed = false;
  std::vector<std::string> ids;
  const auto& raw = args.raw;
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto& a = raw[i];
    auto value = [&](const char* name) -> std::optional<std::string> {
      if (i + 1 < raw.size())
        return raw[++i];
      std::fprintf(stderr, "ingestd retry: %s needs a value\n%s", name, retry_usage);
      return std::nullopt;
    };
    if (a == "-h" || a == "--help") {
      std::fputs(retry_usage, stdout);
      return ok;
    }
    if (a == "--json") {
      json = true;
    } else if (a == "--failed") {
      all_failed = true;
    } else if (a == "--stage") {
      auto v = value("--stage");
      if (!v)
        return usage;
      if (find_stage(*v) == nullptr) {
        std::fprintf(stderr, "ingestd retry: --stage %s: expected ingest, unpack or match\n",
                     v->c_str());
        return usage;
      }
      req.stage = *v;
    } else if (a == "--since") {
      auto v = value("--since");
      if (!v)
        return usage;
      auto t = since_time(*v);
      if (!t) {
        std::fprintf(stderr,
                     "ingestd retry: --since %s: expected a time (2026-11-25, "
                     "2026-11-25T08:00:00Z) or an age (90m, 12h, 7d)\n",
                     v->c_str());
        return usage;
      }
      req.since = *t;
    } else if (a == "--limit") {
      auto v = value("--limit");
      if (!v)
        return usage;
      char* end = nullptr;
      long n = std::strtol(v->c_str(), &end, 10);
      if (end == v->c_str() || *end != '\0' || n < 1 || n > 100000) {
        std::fprintf(stderr, "ingestd retry: --limit %s: expected a number from 1 to 100000\n",
                     v->c_str());
        return usage;
      }
      req.limit = static_cast<int>(n);
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "ingestd retry: unknown option %s\n%s", a.c_str(), retry_usage);
      return usage;
    } else {
      ids.push_back(a);
    }
  }
  if (all_failed == !ids.empty()) {
    std::fputs("ingestd retry: give either IDs or --failed\n", stderr);
    std::fputs(retry_usage, stderr);
    return usage;
  }
  if (!ids.empty() && (!req.stage.empty() || !req.since.empty())) {
    std::fputs("ingestd retry: --stage and --since go with --failed\n", stderr);
    return usage;
  }
  for (const auto& text : ids) {
    auto id = uuid::parse(text);
    if (!id) {
      std::fprintf(stderr, "ingestd retry: '%s' is not an ingestion or document id (a UUID)\n",
                   text.c_str());
      return usage;
    }
    req.ids.push_back(*id);
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  for (const auto& spec : configured_queues(*cfg))
    req.queues.emplace_back(spec.stage, spec.name);
  req.via_outbox = cfg->queue.backend == "sqs";
  req.who = "cli";
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0')
    req.who.append(":").append(user);

  pg_intake_repository db{cfg->database.url, req.via_outbox};
  auto r = db.retry_failed(req, std::chrono::seconds{60});
  if (!r) {
    std::fprintf(stderr, "ingestd retry: database: %s\n", r.error().describe().c_str());
    return failure;
  }
  int64_t sent = 0;
  int64_t not_enabled = 0;
  std::set<std::string> found;
  for (const auto& item : *r) {
    found.insert(item.id.str());
    found.insert(item.document_id.str());
    if (item.sent)
      ++sent;
    else
      ++not_enabled;
    if (json) {
      std::printf("%s\n", json_line(item).c_str());
    } else if (item.sent) {
      std::printf("retrying %-6s %s (document %s); it failed with: %s\n", item.stage.c_str(),
                  item.id.str().c_str(), item.document_id.str().c_str(), item.last_error.c_str());
    } else {
      std::fprintf(stderr,
                   "ingestd retry: %s %s stays failed: stage %s is not enabled here "
                   "(stages.enabled)\n",
                   item.stage.c_str(), item.id.str().c_str(), item.stage.c_str());
    }
  }
  // An ID is answered when an item of it was found: itself, or its document's matching (an
  // ingestion id whose ingestion did not fail).
  int64_t unanswered = 0;
  for (const auto& id : req.ids) {
    bool answered = found.count(id.str()) > 0;
    if (!answered) {
      auto ingestion = db.find_ingestion(id, std::chrono::seconds{30});
      answered = ingestion && *ingestion && found.count((*ingestion)->document_id.str()) > 0;
    }
    if (!answered) {
      ++unanswered;
      std::fprintf(stderr,
                   "ingestd retry: %s has no failed stage (unknown, or nothing of it failed)\n",
                   id.str().c_str());
    }
  }
  if (!json)
    std::printf("%lld item(s) retried\n", static_cast<long long>(sent));
  return unanswered == 0 && not_enabled == 0 ? ok : failure;
}

} // namespace ingestd::cli
