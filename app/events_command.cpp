// `ingestd events [--follow] [--json]`: prints the status event stream that the outbox keeps for
// the retention (outbox.retention_hours), oldest first; --follow waits for new events.
// `ingestd events --dead` lists the outbox rows that failed outbox.max_attempts sends, and
// `ingestd events redeliver ID... | --all` gives them back to the relay.
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/db/pg_outbox_repository.hpp"
#include "adapters/support/blocking_call.hpp"
#include "app/cli.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* events_usage = R"(Usage: ingestd events [--follow] [--json]
       ingestd events --dead [--json]
       ingestd events redeliver ID... | --all

Prints the status event stream, oldest first: every state change of documents, ingestions,
matching, reviews and workers (DOCUMENT_ADDED, INGESTION_QUEUED, INGESTION_STARTED,
INGESTION_COMPLETED, INGESTION_FAILED, INGESTION_SKIPPED, INGESTION_CANCELLED, DOCUMENT_PROCESSED,
MATCHING_COMPLETED, MATCHING_FAILED, REVIEW_COMPLETED, RETRY_REQUESTED, WARNING, WORKER_STARTED,
WORKER_FINISHED),
as kept for outbox.retention_hours.

  --follow   keep printing new events as they are written (stop with Ctrl-C)
  --json     one JSON object per line: id, type, time, tenant_id, document_id, ingestion_id,
             payload (the body the webhook and SQS sinks receive)

The sinks: INGESTD_EVENTS_WEBHOOK_URL and INGESTD_EVENTS_WEBHOOK_SECRET (a signed POST per
event), outbox.events_sqs_queue (an SQS message per event, with the message attributes type,
tenant_id and document_id); `ingestd run` delivers to them. outbox.events_webhook_types and
outbox.events_sqs_types limit a sink to a comma-separated list of types.

  --dead     the outbox rows (events for a sink, queue messages of hand-offs) that failed
             outbox.max_attempts sends and are no longer tried, the most recent first: id,
             destination, attempts, when it died, the last error (--json: one object per line,
             with the row's body); kept for outbox.retention_hours after they died
  redeliver  gives dead rows back to the relay (by id, or --all), their attempts reset
)";

volatile std::sig_atomic_t stop_requested = 0;

void request_stop(int) {
  stop_requested = 1;
}

std::string text(const rapidjson::Value& v, const char* key) {
  if (!v.IsObject() || !v.HasMember(key) || !v[key].IsString())
    return "-";
  return v[key].GetString();
}

void print(const stream_event& e, bool json) {
  if (json) {
    std::printf("%s\n", e.body.c_str());
    return;
  }
  rapidjson::Document doc;
  doc.Parse(e.body.c_str(), e.body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    std::printf("%s\n", e.body.c_str());
    return;
  }
  std::string payload = "{}";
  if (doc.HasMember("payload")) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w{buf};
    doc["payload"].Accept(w);
    payload = buf.GetString();
  }
  std::printf("%-27s %-20s doc %-36s ing %-36s %s\n", text(doc, "time").c_str(),
              text(doc, "type").c_str(), text(doc, "document_id").c_str(),
              text(doc, "ingestion_id").c_str(), payload.c_str());
}

std::string json_text(const std::string& s) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  return buf.GetString();
}

int print_dead(outbox_repository& outbox, bool json) {
  constexpr int limit = 10000;
  auto rows = blocking_call<std::vector<dead_outbox_row>>(
      std::chrono::seconds{60}, "events.timeout", "the database",
      [&](auto cb) { outbox.dead_rows(limit, cb); });
  if (!rows) {
    std::fprintf(stderr, "ingestd events: database: %s\n", rows.error().describe().c_str());
    return failure;
  }
  for (auto& r : *rows) {
    if (json)
      std::printf(R"({"id":%lld,"destination":%s,"attempts":%d,"created_at":%s,"dead_at":%s,)"
                  R"("last_error":%s,"body":%s})"
                  "\n",
                  static_cast<long long>(r.id), json_text(r.destination).c_str(), r.attempts,
                  json_text(r.created_at).c_str(), json_text(r.dead_at).c_str(),
                  json_text(r.last_error).c_str(), json_text(r.body).c_str());
    else
      std::printf("%-10lld %-16s %4d attempts  dead %s  %s\n", static_cast<long long>(r.id),
                  r.destination.c_str(), r.attempts, r.dead_at.c_str(), r.last_error.c_str());
  }
  if (!json)
    std::printf("%zu dead row(s)%s\n", rows->size(),
                rows->size() == static_cast<size_t>(limit) ? " (the most recent shown)" : "");
  return ok;
}

int redeliver(outbox_repository& outbox, const std::vector<int64_t>& ids) {
  auto n = blocking_call<int64_t>(std::chrono::seconds{60}, "events.timeout", "the database",
                                  [&](auto cb) { outbox.redeliver(ids, cb); });
  if (!n) {
    std::fprintf(stderr, "ingestd events: database: %s\n", n.error().describe().c_str());
    return failure;
  }
  std::printf("%lld dead row(s) given back to the relay\n", static_cast<long long>(*n));
  return ok;
}

} // namespace

int events_command(const arguments& args) {
  bool follow = false, json = false, dead = false, redeliver_all = false;
  std::optional<std::vector<int64_t>> to_redeliver;
  for (auto& a : args.raw) {
    if (a == "--help" || a == "-h") {
      std::fputs(events_usage, stdout);
      return ok;
    }
    if (to_redeliver) {
      if (a == "--all") {
        redeliver_all = true;
        continue;
      }
      char* end = nullptr;
      errno = 0;
      auto id = std::strtoll(a.c_str(), &end, 10);
      if (a.empty() || *end != '\0' || errno != 0 || id <= 0) {
        std::fprintf(stderr, "ingestd events redeliver: not a row id: %s\n%s", a.c_str(),
                     events_usage);
        return usage;
      }
      to_redeliver->push_back(id);
    } else if (a == "redeliver") {
      to_redeliver.emplace();
    } else if (a == "--follow") {
      follow = true;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--dead") {
      dead = true;
    } else {
      std::fprintf(stderr, "ingestd events: unknown argument %s\n%s", a.c_str(), events_usage);
      return usage;
    }
  }
  if (to_redeliver && (redeliver_all == !to_redeliver->empty() || follow || json || dead)) {
    std::fprintf(stderr, "ingestd events redeliver: give row ids or --all (and nothing else)\n%s",
                 events_usage);
    return usage;
  }
  if (dead && follow) {
    std::fprintf(stderr, "ingestd events: --dead does not follow\n%s", events_usage);
    return usage;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  pg_outbox_repository outbox{cfg->database.url};
  if (to_redeliver)
    return redeliver(outbox, *to_redeliver);
  if (dead)
    return print_dead(outbox, json);
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  int64_t after = 0;
  constexpr int page = 1000;
  while (stop_requested == 0) {
    auto events = blocking_call<std::vector<stream_event>>(
        std::chrono::seconds{60}, "events.timeout", "the database",
        [&](auto cb) { outbox.read_stream(after, page, cb); });
    if (!events) {
      std::fprintf(stderr, "ingestd events: database: %s\n", events.error().describe().c_str());
      return failure;
    }
    for (auto& e : *events) {
      print(e, json);
      after = e.id;
    }
    std::fflush(stdout);
    if (static_cast<int>(events->size()) == page)
      continue;
    if (!follow)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds{500});
  }
  return ok;
}

} // namespace ingestd::cli
