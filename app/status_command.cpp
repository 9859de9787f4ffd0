// `ingestd status`: what the database and the queue hold now: ingestions by status, the oldest in
// progress, failures by error class, documents awaiting review, matching by status and matching
// in progress for too long, queue depth; --json for scripts.
#include <cstdio>
#include <optional>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_node_repository.hpp"
#include "adapters/ocr/thread_pool_executor.hpp"
#include "adapters/queue/queue.hpp"
#include "adapters/support/blocking_call.hpp"
#include "app/cli.hpp"
#include "app/runtime.hpp"
#include "messages/text.hpp"

namespace ingestd::cli {

namespace {

/// n / of, none when `of` is 0.
std::optional<double> ratio(int64_t n, int64_t of) {
  if (of <= 0)
    return std::nullopt;
  return static_cast<double>(n) / static_cast<double>(of);
}

constexpr const char* status_usage = R"(Usage: ingestd status [--json] [--documents]

  --json        one JSON object: ingestions by status, oldest_in_progress_seconds,
                failures_by_error_class, documents_needing_review (count and ids), matching
                (documents by matching status, in_progress_over_10_minutes), queue depth,
                nodes by state (running, draining, stopped, lost; null when unavailable)
  --documents   also a table of the latest documents with what was extracted, their matching
                status and cluster (with --json: a "documents" array; cluster_id in full,
                parent_id and member_name for a document unpacked from a container)

A matching in progress for more than 10 minutes means a matching worker crashed; the next
delivery of its message, or the dead-letter queue, takes it from there.
)";

std::string field(const rapidjson::Value& v, const char* key) {
  if (!v.IsObject() || !v.HasMember(key))
    return "-";
  auto& x = v[key];
  if (x.IsString())
    return x.GetString();
  if (x.IsNumber()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", x.GetDouble());
    return buf;
  }
  if (x.IsBool())
    return x.GetBool() ? "yes" : "no";
  return "-";
}

/// The deadline of each look-up.
constexpr std::chrono::seconds status_timeout{60};

/// A database deadline reads as every other deadline of this command.
error database_error(error e) {
  if (e.code == intake_repository::timeout_code)
    return timeout_error("status.timeout", "the database", status_timeout);
  return e;
}

/// A uuid as the tables show it: its last 8 hex digits (the random end of a UUIDv7; its start is
/// a timestamp that documents of one batch share). "-" when there is none.
std::string short_id(const std::string& id) {
  if (id.size() < 8 || id == "-")
    return "-";
  return id.substr(id.size() - 8);
}

} // namespace

int status_command(const arguments& args) {
  bool json = false, documents = false;
  for (auto& a : args.raw) {
    if (a == "-h" || a == "--help") {
      std::fputs(status_usage, stdout);
      return ok;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--documents") {
      documents = true;
    } else {
      std::fprintf(stderr, "ingestd status: unknown argument %s\n%s", a.c_str(), status_usage);
      return usage;
    }
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  thread_pool_executor cpu{1};
  auto rt = make_runtime(*cfg, cpu, runtime_parts{false, false, false, false});
  if (!rt) {
    std::fprintf(stderr, "ingestd status: %s\n", rt.error().describe().c_str());
    return failure;
  }
  pg_intake_repository look{cfg->database.url};
  auto summary = look.summarize(status_timeout);
  if (!summary) {
    std::fprintf(stderr, "ingestd status: database: %s\n",
                 database_error(summary.error()).describe().c_str());
    return failure;
  }
  auto ingest_queue = (*rt)->open_queue(configured_queues(*cfg).front());
  if (!ingest_queue) {
    std::fprintf(stderr, "ingestd status: queue: %s\n", ingest_queue.error().describe().c_str());
    return failure;
  }
  auto qs = blocking_call<queue_stats>(status_timeout, "status.timeout", "the queue",
                                       [&](auto cb) { (*ingest_queue)->stats(cb); });
  if (!qs) {
    std::fprintf(stderr, "ingestd status: queue: %s\n", qs.error().describe().c_str());
    return failure;
  }
  auto review = look.review_json(100, status_timeout);
  if (!review) {
    std::fprintf(stderr, "ingestd status: database: %s\n",
                 database_error(review.error()).describe().c_str());
    return failure;
  }
  result<std::string> docs = std::string{"[]"};
  if (documents) {
    docs = look.documents_json(1000, status_timeout);
    if (!docs) {
      std::fprintf(stderr, "ingestd status: database: %s\n",
                   database_error(docs.error()).describe().c_str());
      return failure;
    }
  }
  // The node registry: nodes by state (lost: not seen for its lease). Unavailable (e.g. a schema
  // before migration 006) is reported, not fatal.
  pg_node_repository node_registry{cfg->database.url};
  auto nodes = blocking_call<std::vector<node_info>>(
      status_timeout, "status.timeout", "the database", [&](auto cb) { node_registry.list(cb); });
  auto nodes_in = [&](const char* state) {
    long long n = 0;
    if (nodes)
      for (auto& node : *nodes)
        n += node.state == state ? 1 : 0;
    return n;
  };
  rapidjson::Document review_doc, docs_doc;
  review_doc.Parse(review->c_str());
  docs_doc.Parse(docs->c_str());

  if (json) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w{buf};
    w.StartObject();
    w.Key("ingestions");
    w.StartObject();
    w.Key("in_progress");
    w.Int64(summary->in_progress);
    w.Key("completed");
    w.Int64(summary->completed);
    w.Key("failed");
    w.Int64(summary->failed);
    w.Key("cancelled");
    w.Int64(summary->cancelled);
    w.Key("skipped");
    w.Int64(summary->skipped);
    w.EndObject();
    w.Key("skipped_by_reason");
    w.StartObject();
    for (auto& [reason, n] : summary->skipped_by_reason) {
      w.Key(reason.c_str());
      w.Int64(n);
    }
    w.EndObject();
    w.Key("oldest_in_progress_seconds");
    w.Int64(summary->oldest_in_progress_seconds);
    w.Key("failures_by_error_class");
    w.StartObject();
    for (auto& [cls, n] : summary->failures_by_error_class) {
      w.Key(cls.empty() ? "unknown" : cls.c_str());
      w.Int64(n);
    }
    w.EndObject();
    w.Key("documents_needing_review");
    w.Int64(summary->documents_needing_review);
    w.Key("matching");
    w.StartObject();
    for (const char* st : {"pending", "in-progress", "succeeded", "failed"}) {
      int64_t n = 0;
      for (auto& [key, count] : summary->matching_by_status)
        if (key == st)
          n = count;
      w.Key(st);
      w.Int64(n);
    }
    w.Key("in_progress_over_10_minutes");
    w.Int64(summary->matching_in_progress_over_10_minutes);
    w.Key("oldest_in_progress_seconds");
    w.Int64(summary->oldest_matching_in_progress_seconds);
    w.EndObject();
    w.Key("review");
    review_doc.Accept(w);
    w.Key("straight_through");
    w.StartObject();
    w.Key("days");
    w.Int(30);
    w.Key("completed");
    w.Int64(summary->completed_30_days);
    w.Key("through");
    w.Int64(summary->straight_through_30_days);
    w.Key("rate");
    if (auto r = ratio(summary->straight_through_30_days, summary->completed_30_days))
      w.Double(*r);
    else
      w.Null();
    w.Key("sampled");
    w.StartObject();
    w.Key("right");
    w.Int64(summary->sampled_right);
    w.Key("wrong");
    w.Int64(summary->sampled_wrong);
    w.Key("waiting");
    w.Int64(summary->sampled_waiting);
    w.EndObject();
    w.Key("error_rate");
    if (auto r = ratio(summary->sampled_wrong, summary->sampled_right + summary->sampled_wrong))
      w.Double(*r);
    else
      w.Null();
    w.EndObject();
    w.Key("queue");
    w.StartObject();
    w.Key("name");
    w.String(cfg->queue.name.c_str());
    w.Key("visible");
    w.Int64(qs->visible);
    w.Key("in_flight");
    w.Int64(qs->in_flight);
    w.Key("delayed");
    w.Int64(qs->delayed);
    w.Key("oldest_age_seconds");
    w.Int64(qs->oldest_age_seconds);
    w.EndObject();
    w.Key("nodes");
    if (nodes) {
      w.StartObject();
      for (const char* st : {"running", "draining", "stopped", "lost"}) {
        w.Key(st);
        w.Int64(nodes_in(st));
      }
      w.EndObject();
    } else {
      w.Null();
    }
    if (documents) {
      w.Key("documents");
      docs_doc.Accept(w);
    }
    w.EndObject();
    std::printf("%s\n", buf.GetString());
    return ok;
  }

  std::printf("ingestions   in progress %lld   completed %lld   failed %lld   cancelled %lld\n",
              static_cast<long long>(summary->in_progress),
              static_cast<long long>(summary->completed), static_cast<long long>(summary->failed),
              static_cast<long long>(summary->cancelled));
  std::printf("skipped   %lld", static_cast<long long>(summary->skipped));
  for (auto& [reason, n] : summary->skipped_by_reason)
    std::printf("   %s %lld", reason.c_str(), static_cast<long long>(n));
  std::printf("\n");
  std::printf("oldest in progress   %lld s\n",
              static_cast<long long>(summary->oldest_in_progress_seconds));
  std::printf("failures by class   ");
  if (summary->failures_by_error_class.empty())
    std::printf(" none");
  for (auto& [cls, n] : summary->failures_by_error_class)
    std::printf(" %s %lld", cls.empty() ? "unknown" : cls.c_str(), static_cast<long long>(n));
  std::printf("\nqueue %s   visible %lld   in flight %lld   delayed %lld   oldest %lld s\n",
              cfg->queue.name.c_str(), static_cast<long long>(qs->visible),
              static_cast<long long>(qs->in_flight), static_cast<long long>(qs->delayed),
              static_cast<long long>(qs->oldest_age_seconds));
  auto matching = [&](const char* st) {
    for (auto& [key, count] : summary->matching_by_status)
      if (key == st)
        return static_cast<long long>(count);
    return 0LL;
  };
  std::printf("matching   pending %lld   in progress %lld   succeeded %lld   failed %lld\n",
              matching("pending"), matching("in-progress"), matching("succeeded"),
              matching("failed"));
  std::printf("matching in progress over 10 min   %lld%s\n",
              static_cast<long long>(summary->matching_in_progress_over_10_minutes),
              summary->matching_in_progress_over_10_minutes > 0 ? "   (a matching worker crashed?)"
                                                                : "");
  if (nodes)
    std::printf("nodes   running %lld   draining %lld   stopped %lld   lost %lld\n",
                nodes_in("running"), nodes_in("draining"), nodes_in("stopped"), nodes_in("lost"));
  else
    std::printf("nodes   unavailable: %s\n", nodes.error().describe().c_str());
  std::printf("documents awaiting review: %lld\n",
              static_cast<long long>(summary->documents_needing_review));
  // What goes through without a person, and how often it is wrong (the sampled checks).
  auto checked = summary->sampled_right + summary->sampled_wrong;
  if (auto r = ratio(summary->straight_through_30_days, summary->completed_30_days))
    std::printf("straight through (30 days)   %.1f%% of %lld completed", 100.0 * *r,
                static_cast<long long>(summary->completed_30_days));
  else
    std::printf("straight through (30 days)   none completed");
  if (auto e = ratio(summary->sampled_wrong, checked))
    std::printf("   error rate %.1f%% (%lld of %lld sampled checks corrected)", 100.0 * *e,
                static_cast<long long>(summary->sampled_wrong), static_cast<long long>(checked));
  else
    std::printf("   error rate not measured (review.sample_rate sends none to a check yet)");
  if (summary->sampled_waiting > 0)
    std::printf("   %lld sampled waiting", static_cast<long long>(summary->sampled_waiting));
  std::printf("\n");
  if (review_doc.IsArray())
    for (auto& r : review_doc.GetArray())
      std::printf("  %s  %s  %s\n", field(r, "document_id").c_str(), field(r, "file_name").c_str(),
                  clip(field(r, "last_error"), 80).c_str());
  if (documents && docs_doc.IsArray()) {
    std::printf("\n%-8s %-34s %-12s %-6s %-16s %-26s %-10s %5s %12s %-11s %-8s\n", "ID", "FILE",
                "STATE", "REVIEW", "INVOICE", "SUPPLIER", "DATE", "CUR", "TOTAL", "MATCHING",
                "CLUSTER");
    for (auto& d : docs_doc.GetArray())
      std::printf(
          "%-8s %-34s %-12s %-6s %-16s %-26s %-10s %5s %12s %-11s %-8s\n",
          short_id(field(d, "document_id")).c_str(), clip(field(d, "file_name"), 34).c_str(),
          field(d, "state").c_str(), field(d, "needs_human_review").c_str(),
          clip(field(d, "invoice_number"), 16).c_str(), clip(field(d, "supplier_name"), 26).c_str(),
          field(d, "invoice_date").c_str(), field(d, "currency").c_str(), field(d, "total").c_str(),
          field(d, "matching_status").c_str(), short_id(field(d, "cluster_id")).c_str());
    std::printf(
        "(ID and CLUSTER: the last 8 hex digits; a cluster is named by its smallest document id; "
        "full ids: --json; 'ingestd matches ID' lists a document's matches)\n");
  }
  return ok;
}

} // namespace ingestd::cli
