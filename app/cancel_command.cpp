// `ingestd cancel INGESTION_ID`: cancels an ingestion. A queued one is cancelled at
// once and skipped when its message arrives; a running one stops at its next step boundary.
#include <cstdio>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "app/cli.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* cancel_usage = R"(Usage: ingestd cancel [--json] INGESTION_ID

Cancels an ingestion. A queued one becomes 'cancelled' at once and its message is deleted when
it arrives; a running one is asked to stop: its worker's heartbeat sees the request (within
worker.heartbeat_rate_seconds) and the job stops at its next step boundary, gives its claim up
and records 'cancelled'. Either way the audit trail records the request (step "cancel").
A container (stage unpack) cascades: the ingestions of its child documents (and of nested
containers' children) not yet finished are cancelled the same way, even when the container
itself has completed; a running unpack adds no child once it is cancelled.

  --json    print the outcome as JSON

Exit codes: 0 cancelled, being cancelled or cancelled before, or a finished container whose
children were cancelled; 1 the ingestion is unknown or already finished (completed or failed)
with nothing left to cancel, or the database could not be reached; 2 usage error.
)";

const char* outcome_name(cancel_outcome o) {
  switch (o) {
  case cancel_outcome::cancelled:
    return "cancelled";
  case cancel_outcome::cancelling:
    return "cancelling";
  case cancel_outcome::already_cancelled:
    return "already_cancelled";
  case cancel_outcome::finished:
    return "finished";
  case cancel_outcome::not_found:
    return "not_found";
  }
  return "not_found";
}

} // namespace

int cancel_command(const arguments& args) {
  bool json = false;
  std::vector<std::string> ids;
  for (auto& a : args.raw) {
    if (a == "-h" || a == "--help") {
      std::fputs(cancel_usage, stdout);
      return ok;
    }
    if (a == "--json") {
      json = true;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "ingestd cancel: unknown option %s\n%s", a.c_str(), cancel_usage);
      return usage;
    } else {
      ids.push_back(a);
    }
  }
  if (ids.size() != 1) {
    std::fputs(cancel_usage, stderr);
    return usage;
  }
  auto id = uuid::parse(ids.front());
  if (!id) {
    std::fprintf(stderr, "ingestd cancel: '%s' is not an ingestion id (a UUID)\n",
                 ids.front().c_str());
    return usage;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  pg_intake_repository db{cfg->database.url};
  auto r = db.cancel_ingestion(*id, std::nullopt, "cli", std::chrono::seconds{30});
  if (!r) {
    std::fprintf(stderr, "ingestd cancel: database: %s\n", r.error().describe().c_str());
    return failure;
  }
  // A finished container whose children were cancelled did what was asked.
  bool done = r->outcome != cancel_outcome::not_found
              && (r->outcome != cancel_outcome::finished || r->children() > 0);
  if (json) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w{buf};
    auto text = id->str();
    w.StartObject();
    w.Key("ingestion_id");
    w.String(text.c_str());
    w.Key("outcome");
    w.String(outcome_name(r->outcome));
    w.Key("status_before");
    w.String(r->status.c_str());
    w.Key("children_cancelled");
    w.Int64(r->children_cancelled);
    w.Key("children_cancelling");
    w.Int64(r->children_cancelling);
    w.EndObject();
    std::printf("%s\n", buf.GetString());
  }
  switch (r->outcome) {
  case cancel_outcome::cancelled:
    if (!json)
      std::printf(
          "cancelled ingestion=%s (it was queued; its message is deleted when it arrives)\n",
          id->str().c_str());
    break;
  case cancel_outcome::cancelling:
    if (!json)
      std::printf("cancelling ingestion=%s (it is running: it stops at its next step)\n",
                  id->str().c_str());
    break;
  case cancel_outcome::already_cancelled:
    if (!json)
      std::printf("ingestion=%s was cancelled before\n", id->str().c_str());
    break;
  case cancel_outcome::finished:
    if (r->children() > 0)
      break; // its children are reported below
    std::fprintf(stderr,
                 "ingestd cancel: ingestion %s is already %s: only a queued or running ingestion "
                 "can be cancelled\n",
                 id->str().c_str(), r->status.c_str());
    break;
  case cancel_outcome::not_found:
    std::fprintf(stderr, "ingestd cancel: no ingestion %s\n", id->str().c_str());
    break;
  }
  if (!json && r->children() > 0)
    std::printf("container ingestion=%s (%s): %lld children cancelled, %lld stopping\n",
                id->str().c_str(), r->status.c_str(), static_cast<long long>(r->children_cancelled),
                static_cast<long long>(r->children_cancelling));
  return done ? ok : failure;
}

} // namespace ingestd::cli
