// `ingestd cancel INGESTION_ID | --batch BATCH_ID`: cancels an ingestion, or what of a batch is not
// finished. A queued one is cancelled at once and skipped when its message arrives; a running one
// stops at its next step boundary.
#include <cstdio>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "app/cli.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* cancel_usage = R"(Usage: ingestd cancel [--json] INGESTION_ID
       ingestd cancel [--json] --batch BATCH_ID

Cancels an ingestion. A queued one becomes 'cancelled' at once and its message is deleted when
it arrives; a running one is asked to stop: its worker's heartbeat sees the request (within
worker.heartbeat_rate_seconds) and the job stops at its next step boundary, gives its claim up
and records 'cancelled'. Either way the audit trail records the request (step "cancel").
A container (stage unpack) cascades: the ingestions of its child documents (and of nested
containers' children) not yet finished are cancelled the same way, even when the container
itself has completed; a running unpack adds no child once it is cancelled.

  --batch ID  cancel every ingestion of the batch (see 'ingestd batches') still in progress, each
              as above; the batch then finishes as its running ones stop
  --json      print the outcome as JSON

Exit codes: 0 cancelled, being cancelled or cancelled before, or a finished container whose
children were cancelled, or a batch found (with or without anything left to cancel); 1 the
ingestion is unknown or already finished (completed or failed) with nothing left to cancel, the
batch is unknown, or the database could not be reached; 2 usage error.
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

/// `--batch`: each of the batch's ingestions in progress, as cancel_ingestion does it.
int cancel_batch(pg_intake_repository& db, uuid batch_id, bool json) {
  constexpr std::chrono::seconds timeout{30};
  auto found = db.find_batch(batch_id, std::nullopt, timeout);
  auto open = found && *found ? db.batch_in_progress(batch_id, timeout)
                              : result<std::vector<uuid>>{std::vector<uuid>{}};
  if (!found || !open) {
    std::fprintf(stderr, "ingestd cancel: database: %s\n",
                 (!found ? found.error() : open.error()).describe().c_str());
    return failure;
  }
  if (!*found) {
    std::fprintf(stderr, "ingestd cancel: no batch %s\n", batch_id.str().c_str());
    return failure;
  }
  int64_t cancelled = 0, cancelling = 0;
  for (const auto& id : *open) {
    auto r = db.cancel_ingestion(id, std::nullopt, "cli", timeout);
    if (!r) {
      std::fprintf(stderr, "ingestd cancel: database: %s\n", r.error().describe().c_str());
      return failure;
    }
    cancelled += (r->outcome == cancel_outcome::cancelled ? 1 : 0) + r->children_cancelled;
    cancelling += (r->outcome == cancel_outcome::cancelling ? 1 : 0) + r->children_cancelling;
  }
  if (json) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w{buf};
    auto text = batch_id.str();
    w.StartObject();
    w.Key("batch_id");
    w.String(text.c_str());
    w.Key("state_before");
    w.String((*found)->state.c_str());
    w.Key("cancelled");
    w.Int64(cancelled);
    w.Key("cancelling");
    w.Int64(cancelling);
    w.EndObject();
    std::printf("%s\n", buf.GetString());
  } else {
    std::printf("batch=%s (%s, %s): %lld cancelled, %lld stopping\n", batch_id.str().c_str(),
                (*found)->name.c_str(), (*found)->state.c_str(), static_cast<long long>(cancelled),
                static_cast<long long>(cancelling));
  }
  return ok;
}

} // namespace

int cancel_command(const arguments& args) {
  bool json = false;
  bool batch = false;
  std::vector<std::string> ids;
  for (auto& a : args.raw) {
    if (a == "-h" || a == "--help") {
      std::fputs(cancel_usage, stdout);
      return ok;
    }
    if (a == "--json") {
      json = true;
    } else if (a == "--batch") {
      batch = true;
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
    std::fprintf(stderr, "ingestd cancel: '%s' is not %s id (a UUID)\n", ids.front().c_str(),
                 batch ? "a batch" : "an ingestion");
    return usage;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  pg_intake_repository db{cfg->database.url};
  if (batch)
    return cancel_batch(db, *id, json);
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
