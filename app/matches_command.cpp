// `ingestd matches DOCUMENT_ID [--json]`: a document's match edges and the members of
// its cluster, with file names and matching status; --json for scripts.
#include <algorithm>
#include <cstdio>
#include <map>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_matching_repository.hpp"
#include "adapters/support/blocking_call.hpp"
#include "app/cli.hpp"
#include "messages/text.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* matches_usage = R"(Usage: ingestd matches DOCUMENT_ID [--json]

Lists the documents that matching linked to DOCUMENT_ID (the other document, the kind of match,
the confidence and the reason) and the members of its cluster (the documents connected to it by
matches; a cluster is named by its smallest document id).

  --json   one JSON object: document_id, file_name, matching_status, cluster_id, matches
           (document_id, file_name, kind, confidence, reason) and members (document_id,
           file_name, matching_status)

Full document ids: 'ingestd status --documents --json'.
)";

/// The deadline of each look-up.
constexpr std::chrono::seconds matches_timeout{60};

using matches = std::pair<std::vector<stored_match>, std::vector<uuid>>;

} // namespace

int matches_command(const arguments& args) {
  bool json = false;
  std::vector<std::string> ids;
  for (auto& a : args.raw) {
    if (a == "-h" || a == "--help") {
      std::fputs(matches_usage, stdout);
      return ok;
    }
    if (a == "--json")
      json = true;
    else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "ingestd matches: unknown option %s\n%s", a.c_str(), matches_usage);
      return usage;
    } else
      ids.push_back(a);
  }
  if (ids.size() != 1) {
    std::fprintf(stderr, "ingestd matches: expected one DOCUMENT_ID, got %zu\n%s", ids.size(),
                 matches_usage);
    return usage;
  }
  auto id = uuid::parse(ids.front());
  if (!id) {
    std::fprintf(stderr,
                 "ingestd matches: '%s' is not a document id (a UUID such as "
                 "0190c6e2-7a4b-7c3d-8e5f-1a2b3c4d5e6f)\n",
                 ids.front().c_str());
    return usage;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;

  pg::session_options session{std::chrono::seconds{cfg->database.statement_timeout_seconds},
                              std::chrono::seconds{cfg->database.lock_timeout_seconds},
                              std::chrono::seconds{cfg->database.tcp_user_timeout_seconds}};
  pg_matching_repository repo{cfg->database.url, pg_matching_options{1, session}};
  auto found = blocking_call<matches>(matches_timeout, "matches.timeout", "the database",
                                      [&](auto cb) { repo.matches_of(*id, cb); });
  if (!found) {
    std::fprintf(stderr, "ingestd matches: database: %s\n", found.error().describe().c_str());
    return failure;
  }
  auto& [edges, members] = *found;
  if (members.empty()) {
    std::fprintf(stderr, "ingestd matches: no document %s\n", id->str().c_str());
    return failure;
  }

  // Names for everyone shown.
  std::vector<uuid> shown{*id};
  for (auto& e : edges)
    shown.push_back(e.document_a == *id ? e.document_b : e.document_a);
  shown.insert(shown.end(), members.begin(), members.end());
  std::sort(shown.begin(), shown.end());
  shown.erase(std::unique(shown.begin(), shown.end()), shown.end());
  pg_intake_repository look{cfg->database.url};
  auto labels = look.document_labels(shown, matches_timeout);
  if (!labels) {
    std::fprintf(stderr, "ingestd matches: database: %s\n", labels.error().describe().c_str());
    return failure;
  }
  std::map<uuid, document_label> by_id;
  for (auto& l : *labels)
    by_id[l.id] = l;
  auto label = [&](const uuid& d) {
    auto it = by_id.find(d);
    return it != by_id.end() ? it->second : document_label{d, "-", "", ""};
  };
  auto self = label(*id);

  if (json) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w{buf};
    auto text_or_null = [&](const std::string& s) {
      if (s.empty())
        w.Null();
      else
        w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
    };
    w.StartObject();
    w.Key("document_id");
    w.String(id->str().c_str());
    w.Key("file_name");
    text_or_null(self.file_name);
    w.Key("matching_status");
    text_or_null(self.matching_status);
    w.Key("cluster_id");
    text_or_null(self.cluster_id);
    w.Key("matches");
    w.StartArray();
    for (auto& e : edges) {
      auto other = label(e.document_a == *id ? e.document_b : e.document_a);
      w.StartObject();
      w.Key("document_id");
      w.String(other.id.str().c_str());
      w.Key("file_name");
      text_or_null(other.file_name);
      w.Key("kind");
      text_or_null(e.kind);
      w.Key("confidence");
      w.Double(e.confidence);
      w.Key("reason");
      text_or_null(e.reason);
      w.EndObject();
    }
    w.EndArray();
    w.Key("members");
    w.StartArray();
    for (auto& m : members) {
      auto l = label(m);
      w.StartObject();
      w.Key("document_id");
      w.String(m.str().c_str());
      w.Key("file_name");
      text_or_null(l.file_name);
      w.Key("matching_status");
      text_or_null(l.matching_status);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    std::printf("%s\n", buf.GetString());
    return ok;
  }

  std::printf("document %s  %s  matching %s\n", id->str().c_str(), self.file_name.c_str(),
              self.matching_status.empty() ? "not queued" : self.matching_status.c_str());
  std::printf("cluster  %s\n",
              self.cluster_id.empty() ? "- (not matched yet)" : self.cluster_id.c_str());
  std::printf("\nmatches (%zu)\n", edges.size());
  if (edges.empty())
    std::printf("  none\n");
  else
    std::printf("  %-36s  %-30s  %-14s  %5s  %s\n", "DOCUMENT", "FILE", "KIND", "CONF", "REASON");
  for (auto& e : edges) {
    auto other = label(e.document_a == *id ? e.document_b : e.document_a);
    std::printf("  %-36s  %-30s  %-14s  %5.2f  %s\n", other.id.str().c_str(),
                clip(other.file_name, 30).c_str(), e.kind.c_str(), e.confidence, e.reason.c_str());
  }
  std::printf("\ncluster members (%zu)\n", members.size());
  for (auto& m : members) {
    auto l = label(m);
    std::printf("  %-36s  %-30s  %s%s\n", m.str().c_str(), clip(l.file_name, 30).c_str(),
                l.matching_status.empty() ? "-" : l.matching_status.c_str(),
                m == *id ? "  (this document)" : "");
  }
  return ok;
}

} // namespace ingestd::cli
