// The review desk's test fixture: a fresh schema, a filesystem store, a Postgres queue, documents
// taken in by the real intake and then marked as the pipeline would (gate refused, failed,
// ready), and the desk mounted on a real admin server on a free loopback port.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <httplib.h>
#include <rapidjson/document.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_review_repository.hpp"
#include "adapters/ocr/thread_pool_executor.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "adapters/support/blocking_call.hpp"
#include "admin/admin_server.hpp"
#include "intake/intake_service.hpp"
#include "review/review_desk.hpp"
#include "review/review_service.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

namespace ingestd::test {

/// Structured data whose totals do not reconcile (100 + 19 != 120): the gate refuses it.
inline const char* unreconciled_invoice
    = R"({"invoice_number":"INV-1","invoice_date":"2024-03-01","due_date":"2024-03-31",)"
      R"("supplier_name":"Acme GmbH","supplier_address":"Main St 1, Berlin","supplier_vat_id":"DE123456789",)"
      R"("customer_name":"Beta Ltd","currency":"EUR","line_items":[{"description":"Widget","quantity":1,)"
      R"("unit_price":100,"amount":100}],"subtotal":100,"vat_amount":19,"total":120,)"
      R"("extraction_successful":true,"confidence":"medium","missing_fields":[]})";

class review_fixture : public ::testing::Test {
protected:
  struct answer {
    int status = 0;
    std::string body;
    rapidjson::Document json;
  };

  void SetUp() override {
    db = std::make_unique<pg_schema>();
    root = make_temp_dir("review");
    queue_name = unique_name("q");
    if (auto r = create_postgres_queue(db->url(), queue_name, queue_name + "-dlq", 0); !r)
      FAIL() << r.error().describe();
    q = std::make_shared<postgres_queue>(db->url(), queue_name);
    store = std::make_shared<filesystem_store>(root);
    intake_options intake_opts;
    intake_opts.ingest_queue = queue_name;
    intake = std::make_unique<intake_service>(std::make_shared<pg_intake_repository>(db->url()),
                                              store, intake_opts);
    token_a = "token-a-" + unique_name("s");
    token_b = "token-b-" + unique_name("s");
    token_both = "token-ab-" + unique_name("s");
  }

  void TearDown() override {
    if (admin)
      admin->stop();
    std::filesystem::remove_all(root);
  }

  /// INGESTD_REVIEW_TOKEN for the tokens of the fixture: A, B, and one for both tenants.
  std::string token_setting() const {
    return tenant_a.str() + ":" + token_a + "," + tenant_b.str() + ":" + token_b + ","
           + tenant_a.str() + ":" + token_both + "," + tenant_b.str() + ":" + token_both;
  }

  /// Mounts the desk on a fresh admin server; `tokens` as INGESTD_REVIEW_TOKEN ("" : open desk
  /// for tenant A, the default tenant).
  void start_desk(const std::optional<std::string>& tokens = std::nullopt) {
    auto parsed = http_server::tenant_tokens::parse(tokens.value_or(token_setting()), tenant_a,
                                                    "INGESTD_REVIEW_TOKEN");
    ASSERT_TRUE(parsed) << parsed.error().describe();
    review_desk_options opts;
    opts.tokens = std::move(*parsed);
    opts.default_tenant = tenant_a;
    cpu = std::make_shared<thread_pool_executor>(1);
    review_options service_opts;
    service_opts.providers = providers;
    service = std::make_shared<review_service>(
        std::make_shared<pg_review_repository>(db->url(), queue_name, false), store, cpu,
        service_opts);
    auto desk = std::make_shared<review_desk>(service, std::move(opts));
    admin = std::make_unique<admin_server>("127.0.0.1", 0, admin_probes{});
    // As review_setup mounts it: on the admin endpoint's own server.
    admin->mount([desk](http_server::server& svr) { desk->mount(svr); }, 6);
    auto started = admin->start();
    ASSERT_TRUE(started) << started.error().describe();
  }

  /// Takes in the corpus file `name` for `tenant` and marks its ingestion as the pipeline would:
  /// "gate" (completed, refused by the gate), "gate-failed" (failed by the gate for good),
  /// "failed" (failed, no data) or "ready". The
  /// document is made `minutes_old` minutes old, its ingestion given the submitter's `metadata`.
  /// Returns the document id.
  std::string add_document(uuid tenant, const std::string& name, const std::string& outcome,
                           int minutes_old, const std::string& transcription_text = "",
                           std::vector<std::pair<std::string, std::string>> metadata = {},
                           std::vector<page_word> words = {}) {
    intake_item item;
    item.metadata = std::move(metadata);
    item.tenant_id = tenant;
    item.source.uploaded_by = uuid::v7();
    item.bytes = read_file(source_dir() + "/tests/fixtures/corpus/" + name);
    item.name = name;
    item.channel = "test";
    auto out = intake->submit(item);
    EXPECT_TRUE(out) << out.error().describe();
    auto ingestion = out->ingestion_id.str();
    std::string transcription_path;
    if (!transcription_text.empty()) {
      transcription t;
      t.text = transcription_text;
      t.pages.push_back(transcription_page{1, transcription_text, 0.9, {}, std::move(words)});
      t.page_count = 1;
      t.quality_score = 0.9;
      t.provider = "tesseract";
      transcription_path = "ingestions/" + ingestion + "/transcription-output.json";
      auto put = blocking_call<void>(std::chrono::seconds{10}, "t", "store", [&](auto cb) {
        store->put(transcription_path, to_json(t), "application/json", cb);
      });
      EXPECT_TRUE(put);
    }
    // What the ingestion's stage stored, then its work item's final status (which the trigger
    // gives the ingestion, and the ingestion's outcome to the document).
    if (outcome == "gate" || outcome == "ready" || outcome == "gate-failed")
      db->query(
          "UPDATE ingestion SET structured_data = $2::jsonb, valid_structured_data = $3::boolean, "
          "transcription_file_path = $4 WHERE id = $1",
          {ingestion, unreconciled_invoice, outcome == "ready" ? "true" : "false",
           transcription_path.empty() ? std::nullopt
                                      : std::optional<std::string>{transcription_path}});
    if (outcome == "gate" || outcome == "ready")
      db->query(
          "UPDATE work_item SET status = 'completed', completed_at = now(), last_error = $2 WHERE "
          "id = $1",
          {ingestion, outcome == "gate"
                          ? std::optional<std::string>{"extraction.gate_failed: totals do not "
                                                       "reconcile: subtotal 100.00 + vat 19.00 "
                                                       "!= total 120.00"}
                          : std::nullopt});
    else if (outcome == "gate-failed")
      // A gate verdict a retry cannot change fails the ingestion, with the data for the reviewer.
      db->query("UPDATE work_item SET status = 'failed', completed_at = now(), error_class = "
                "'permanent', "
                "last_error = 'extraction.gate_failed: critical fields missing: confidence is low' "
                "WHERE id = $1",
                {ingestion});
    else
      db->query("UPDATE work_item SET status = 'failed', completed_at = now(), error_class = "
                "'permanent', "
                "last_error = 'ocr.corrupt_file: the file cannot be read' WHERE id = $1",
                {ingestion});
    db->query("INSERT INTO ingestion_event (ingestion_id, step, outcome, detail) VALUES ($1, "
              "'extract', $2, 'test')",
              {ingestion, outcome});
    db->query(
        "UPDATE document SET created_at = now() - make_interval(mins => $2::int) WHERE id = $1",
        {out->document_id.str(), std::to_string(minutes_old)});
    return out->document_id.str();
  }

  int64_t version_of(const std::string& document) {
    return std::stoll(db->scalar("SELECT review_version FROM document WHERE id = $1", {document}));
  }

  httplib::Client client() const {
    httplib::Client c{"127.0.0.1", admin->port()};
    c.set_read_timeout(30, 0);
    return c;
  }

  static httplib::Headers bearer(const std::string& token, const std::string& reviewer = "") {
    httplib::Headers h;
    if (!token.empty())
      h.emplace("Authorization", "Bearer " + token);
    if (!reviewer.empty())
      h.emplace("X-Reviewer", reviewer);
    return h;
  }

  static answer parsed(const httplib::Result& r) {
    answer a;
    if (!r)
      return a;
    a.status = r->status;
    a.body = r->body;
    a.json.Parse(a.body.data(), a.body.size());
    if (a.json.HasParseError())
      a.json.SetObject();
    return a;
  }

  answer get_json(const std::string& path, const std::string& token) const {
    return parsed(client().Get(path.c_str(), bearer(token)));
  }

  answer post_json(const std::string& path, const std::string& body, const std::string& token,
                   const std::string& reviewer = "") const {
    return parsed(client().Post(path.c_str(), bearer(token, reviewer), body, "application/json"));
  }

  static std::string read_file(const std::string& path) {
    std::ifstream in{path, std::ios::binary};
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::unique_ptr<pg_schema> db;
  std::string root, queue_name;
  std::shared_ptr<postgres_queue> q;
  std::shared_ptr<filesystem_store> store;
  std::unique_ptr<intake_service> intake;
  std::shared_ptr<thread_pool_executor> cpu;
  std::shared_ptr<review_service> service;
  std::unique_ptr<admin_server> admin;
  uuid tenant_a = uuid::v7(), tenant_b = uuid::v7();
  std::string token_a, token_b, token_both;
  /// The node's providers as start_desk() gives them to the desk: no Document AI.
  node_providers providers{{"tesseract"}, {"local", "llm"}};
};

} // namespace ingestd::test
