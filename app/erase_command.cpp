// `ingestd erase`: a document or a whole tenant removed from the database and object storage,
// with a receipt; `ingestd erase --receipts` lists the receipts.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/ocr/thread_pool_executor.hpp"
#include "app/cli.hpp"
#include "app/runtime.hpp"
#include "retention/erasure.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* erase_usage
    = R"(Usage: ingestd erase --document ID [--tenant T] [--by NAME] [--json]
       ingestd erase --tenant T --all-documents [--by NAME] [--json]
       ingestd erase --receipts [--tenant T] [--json]

Removes a document everywhere it lives: its original, transcriptions, preprocessed scans and the
review desk's page renders in object storage, then its ingestions, work items and their queue
messages, audit trail, outbox rows and events, matches and reviews in the database. The
documents a container held (attachments, archive members) go with it. A DOCUMENT_ERASED event
tells the event stream's subscribers, and a receipt records what was removed, when and by whom:
ids and counts, nothing of the document itself. Known-file hashes stay.

  --document ID      the document to erase (with --tenant: only if it is that tenant's)
  --tenant T --all-documents
                     every document of tenant T, then its name and credentials; in rounds
                     of 100 documents, each round's rows in one transaction per document
  --by NAME          who asks, for the receipt (default: $USER)
  --receipts         the receipts, newest first (of tenant T with --tenant)
  --json             the receipt(s) as JSON

A document a node is working on is not erased: cancel it (ingestd cancel) or let it finish, then
erase again. An erasure that stopped half way (storage or the database failing) is finished by
running it again: objects are removed before the rows that name them.
Exit codes: 0 erased; 1 no such document, work in progress, or a failure; 2 usage error.
)";

std::string json_of(const erasure_receipt& r) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  auto text = [&](const char* key, const std::string& value) {
    w.Key(key);
    w.String(value.c_str());
  };
  w.StartObject();
  text("receipt_id", r.id.str());
  text("scope", r.scope);
  text("subject_id", r.subject_id.str());
  text("tenant_id", r.tenant_id.str());
  text("erased_by", r.erased_by);
  text("erased_at", r.erased_at);
  w.Key("documents");
  w.Int64(r.documents);
  w.Key("objects");
  w.Int64(r.objects);
  w.Key("rows");
  w.StartObject();
  for (auto& [table, n] : r.rows) {
    w.Key(table.c_str());
    w.Int64(n);
  }
  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

void print_receipt(const erasure_receipt& r) {
  std::printf("erased %s %s of tenant %s: %lld document(s), %lld object(s)\n", r.scope.c_str(),
              r.subject_id.str().c_str(), r.tenant_id.str().c_str(),
              static_cast<long long>(r.documents), static_cast<long long>(r.objects));
  std::string rows;
  for (auto& [table, n] : r.rows)
    if (n > 0)
      rows += (rows.empty() ? "" : ", ") + table + " " + std::to_string(n);
  std::printf("  rows: %s\n  receipt %s, %s, by %s\n", rows.empty() ? "none" : rows.c_str(),
              r.id.str().c_str(), r.erased_at.c_str(), r.erased_by.c_str());
}

} // namespace

int erase_command(const arguments& args) {
  std::optional<uuid> document, tenant;
  std::string by;
  bool json = false, all_documents = false, list_receipts = false;
  const auto& raw = args.raw;
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto& a = raw[i];
    auto id_value = [&](std::optional<uuid>& out) {
      if (i + 1 >= raw.size() || !(out = uuid::parse(raw[i + 1])))
        return false;
      ++i;
      return true;
    };
    if (a == "-h" || a == "--help") {
      std::fputs(erase_usage, stdout);
      return ok;
    }
    if (a == "--document") {
      if (!id_value(document)) {
        std::fputs("ingestd erase: --document needs a document id (a UUID)\n", stderr);
        return usage;
      }
    } else if (a == "--tenant") {
      if (!id_value(tenant)) {
        std::fputs("ingestd erase: --tenant needs a tenant id (a UUID)\n", stderr);
        return usage;
      }
    } else if (a == "--by") {
      if (i + 1 >= raw.size() || raw[i + 1].empty() || raw[i + 1].size() > 200) {
        std::fputs("ingestd erase: --by needs a name of 1 to 200 characters\n", stderr);
        return usage;
      }
      by = raw[++i];
    } else if (a == "--json") {
      json = true;
    } else if (a == "--all-documents") {
      all_documents = true;
    } else if (a == "--receipts") {
      list_receipts = true;
    } else {
      std::fprintf(stderr, "ingestd erase: unknown argument %s\n%s", a.c_str(), erase_usage);
      return usage;
    }
  }
  int modes = (document ? 1 : 0) + (all_documents ? 1 : 0) + (list_receipts ? 1 : 0);
  if (modes != 1 || (all_documents && !tenant)) {
    std::fputs(erase_usage, stderr);
    return usage;
  }
  if (by.empty()) {
    const char* user = std::getenv("USER");
    by = user != nullptr && *user != '\0' ? user : "ingestd erase";
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  pg_erasure_repository db{cfg->database.url};

  if (list_receipts) {
    auto all = db.receipts(tenant, 1000);
    if (!all) {
      std::fprintf(stderr, "ingestd erase: database: %s\n", all.error().describe().c_str());
      return failure;
    }
    if (json) {
      std::string out = "[";
      for (auto& r : *all)
        out += (out.size() > 1 ? "," : "") + json_of(r);
      std::printf("%s]\n", out.c_str());
    } else if (all->empty()) {
      std::puts("no erasures");
    } else {
      for (auto& r : *all)
        print_receipt(r);
    }
    return ok;
  }

  thread_pool_executor cpu{1};
  auto rt = make_runtime(*cfg, cpu, runtime_parts{false, true, false});
  if (!rt) {
    std::fprintf(stderr, "ingestd erase: %s\n", rt.error().describe().c_str());
    return failure;
  }
  eraser erase{db, *(*rt)->storage, erasure_options{by}};
  auto receipt = document ? erase.erase_document(*document, tenant) : erase.erase_tenant(*tenant);
  if (!receipt) {
    std::fprintf(stderr, "ingestd erase: %s\n", receipt.error().describe().c_str());
    return failure;
  }
  if (json)
    std::printf("%s\n", json_of(*receipt).c_str());
  else
    print_receipt(*receipt);
  return ok;
}

} // namespace ingestd::cli
