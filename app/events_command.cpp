// `ingestd events [--follow] [--json]`: prints the status event stream that the outbox keeps for
// the retention (outbox.retention_hours), oldest first; --follow waits for new events.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/db/pg_outbox_repository.hpp"
#include "adapters/support/blocking_call.hpp"
#include "app/cli.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* events_usage = R"(Usage: ingestd events [--follow] [--json]

Prints the status event stream, oldest first: every state change of documents, ingestions,
matching and workers (DOCUMENT_ADDED, INGESTION_QUEUED, INGESTION_STARTED, INGESTION_COMPLETED,
INGESTION_FAILED, INGESTION_SKIPPED, DOCUMENT_PROCESSED, MATCHING_COMPLETED, MATCHING_FAILED,
WARNING, WORKER_STARTED, WORKER_FINISHED), as kept for outbox.retention_hours.

  --follow   keep printing new events as they are written (stop with Ctrl-C)
  --json     one JSON object per line: id, type, time, tenant_id, document_id, ingestion_id,
             payload (the body the webhook and SQS sinks receive)

The sinks: INGESTD_EVENTS_WEBHOOK_URL and INGESTD_EVENTS_WEBHOOK_SECRET (a signed POST per
event), outbox.events_sqs_queue (an SQS message per event); `ingestd run` delivers to them.
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

} // namespace

int events_command(const arguments& args) {
  bool follow = false, json = false;
  for (auto& a : args.raw) {
    if (a == "--help" || a == "-h") {
      std::fputs(events_usage, stdout);
      return ok;
    }
    if (a == "--follow") {
      follow = true;
    } else if (a == "--json") {
      json = true;
    } else {
      std::fprintf(stderr, "ingestd events: unknown argument %s\n%s", a.c_str(), events_usage);
      return usage;
    }
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  pg_outbox_repository outbox{cfg->database.url};
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
