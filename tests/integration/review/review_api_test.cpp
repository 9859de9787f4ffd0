// The review desk's JSON API over HTTP on the admin server, against the real PostgreSQL, the
// filesystem store and the Postgres queue: the queue with its counts and filters, a document,
// approve (as is, corrected, refused by the schema, with plausibility warnings; the approved data
// says a person verified it), reject, reprocess (its work item and message written with it, with
// the providers chosen, which the ingest stage loads; unknown ones and ones this node cannot run
// refused), tokens and tenants, the concurrent save, and the page images; what the reviews say
// about each field's values, which calibrates the extractors' confidence (review.auto_approve),
// and what corrections teach about a supplier (listed, counted, forgotten; review.learn).
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <httplib.h>
#include <rapidjson/document.h>

#include "adapters/db/pg_ingest_repository.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_learning_repository.hpp"
#include "adapters/db/pg_review_repository.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "adapters/support/blocking_call.hpp"
#include "admin/admin_server.hpp"
#include "intake/intake_service.hpp"
#include "review/review_desk.hpp"
#include "review/review_service.hpp"
#include "tests/integration/review/review_fixture.hpp"
#include "tests/support/await.hpp"

namespace ingestd {
namespace {

using test::review_fixture;

class review_api_test : public review_fixture {};

TEST_F(review_api_test, queue_lists_a_tenants_documents_oldest_first_with_counts_and_filters) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 30);
  auto a2 = add_document(tenant_a, "inv02_de_modern.pdf", "failed", 20);
  auto b1 = add_document(tenant_b, "inv03_en_compact.pdf", "gate", 10);
  add_document(tenant_a, "inv04_de_classic.pdf", "ready", 5);
  auto a3 = add_document(tenant_a, "inv05_en_modern.pdf", "gate-failed", 4);
  start_desk();

  auto q = get_json("/review/api/queue", token_a);
  ASSERT_EQ(q.status, 200) << q.body;
  auto& docs = q.json["documents"];
  ASSERT_EQ(docs.Size(), 3u);
  EXPECT_EQ(std::string{docs[0]["document_id"].GetString()}, a1);
  EXPECT_EQ(std::string{docs[0]["reason"].GetString()}, "gate");
  EXPECT_EQ(std::string{docs[0]["file_name"].GetString()}, "inv01_en_classic.pdf");
  EXPECT_EQ(std::string{docs[0]["supplier"].GetString()}, "Acme GmbH");
  EXPECT_EQ(std::string{docs[0]["total"].GetString()}, "120");
  EXPECT_NE(std::string{docs[0]["detail"].GetString()}.find("totals do not reconcile"),
            std::string::npos);
  EXPECT_GE(docs[0]["age_seconds"].GetInt64(), 30 * 60 - 5);
  EXPECT_EQ(std::string{docs[1]["document_id"].GetString()}, a2);
  EXPECT_EQ(std::string{docs[1]["reason"].GetString()}, "failed");
  // A gate verdict that failed the ingestion for good is the gate's reason too.
  EXPECT_EQ(std::string{docs[2]["document_id"].GetString()}, a3);
  EXPECT_EQ(std::string{docs[2]["reason"].GetString()}, "gate");
  EXPECT_EQ(q.json["counts"]["gate"].GetInt64(), 2);
  EXPECT_EQ(q.json["counts"]["failed"].GetInt64(), 1);
  EXPECT_EQ(get_json("/review/api/queue?reason=gate", token_a).json["documents"].Size(), 2u);

  auto failed = get_json("/review/api/queue?reason=failed", token_a);
  ASSERT_EQ(failed.json["documents"].Size(), 1u);
  EXPECT_EQ(std::string{failed.json["documents"][0]["document_id"].GetString()}, a2);
  EXPECT_EQ(get_json("/review/api/queue?reason=bogus", token_a).status, 400);

  // Tenant B's token sees only B; the token of both sees all and filters by tenant.
  auto b = get_json("/review/api/queue", token_b);
  ASSERT_EQ(b.json["documents"].Size(), 1u);
  EXPECT_EQ(std::string{b.json["documents"][0]["document_id"].GetString()}, b1);
  EXPECT_EQ(get_json("/review/api/queue", token_both).json["documents"].Size(), 4u);
  auto only_b = get_json("/review/api/queue?tenant=" + tenant_b.str(), token_both);
  ASSERT_EQ(only_b.json["documents"].Size(), 1u);
  EXPECT_EQ(get_json("/review/api/queue?tenant=" + tenant_b.str(), token_a).status, 403);
}

TEST_F(review_api_test, tokens_are_required_and_checked) {
  add_document(tenant_a, "inv01_en_classic.pdf", "gate", 1);
  start_desk();
  auto none = client().Get("/review/api/queue");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(get_json("/review/api/queue", "wrong").status, 401);
  EXPECT_EQ(get_json("/review/api/queue", token_a + "x").status, 401);
  // The pages send a browser without a session to the login form.
  auto page = client().Get("/review");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 303);
  EXPECT_EQ(page->get_header_value("Location"), "/review/login");
}

TEST_F(review_api_test,
       document_has_fields_checks_transcription_and_audit_trail_within_its_tenant) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 1,
                         "INVOICE INV-1 Acme GmbH total 120", {},
                         {{"INVOICE", 0.1F, 0.1F, 0.3F, 0.12F},
                          {"INV-1", 0.32F, 0.1F, 0.4F, 0.12F},
                          {"Acme", 0.1F, 0.2F, 0.16F, 0.22F},
                          {"GmbH", 0.17F, 0.2F, 0.24F, 0.22F},
                          {"total", 0.6F, 0.7F, 0.7F, 0.72F},
                          {"120", 0.8F, 0.7F, 0.86F, 0.72F}});
  start_desk();
  auto d = get_json("/review/api/documents/" + a1, token_a);
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(std::string{d.json["fields"]["invoice_number"].GetString()}, "INV-1");
  EXPECT_EQ(d.json["machine_fields"]["total"].GetDouble(), 120);
  EXPECT_EQ(d.json["version"].GetInt64(), version_of(a1));
  EXPECT_EQ(std::string{d.json["transcription"].GetString()}, "INVOICE INV-1 Acme GmbH total 120");
  EXPECT_EQ(d.json["page_count"].GetInt(), 1);
  // Where the values are on the page: the words they were read from.
  auto& where = d.json["provenance"];
  ASSERT_TRUE(where.IsObject()) << d.body;
  EXPECT_EQ(std::string{where["invoice_number"]["text"].GetString()}, "INV-1");
  EXPECT_EQ(std::string{where["supplier_name"]["text"].GetString()}, "Acme GmbH");
  EXPECT_EQ(where["supplier_name"]["box"][2].GetDouble(), 0.24);
  EXPECT_EQ(where["total"]["page"].GetInt(), 1);
  EXPECT_EQ(where["total"]["box"][0].GetDouble(), 0.8);
  EXPECT_FALSE(where.HasMember("customer_name")); // Beta Ltd is not on the page
  ASSERT_TRUE(d.json["failed_checks"].IsArray());
  ASSERT_GE(d.json["failed_checks"].Size(), 1u);
  EXPECT_EQ(std::string{d.json["failed_checks"][0]["check"].GetString()}, "totals");
  EXPECT_EQ(std::string{d.json["failed_checks"][0]["fields"][2].GetString()}, "total");
  ASSERT_GE(d.json["events"].Size(), 1u);
  EXPECT_EQ(std::string{d.json["events"][0]["step"].GetString()}, "extract");
  EXPECT_TRUE(d.json["matches"].IsArray());
  // Another tenant's document is a 404 like an unknown one.
  EXPECT_EQ(get_json("/review/api/documents/" + a1, token_b).status, 404);
  EXPECT_EQ(get_json("/review/api/documents/" + uuid::v7().str(), token_a).status, 404);
}

TEST_F(review_api_test,
       approve_with_a_correction_keeps_the_machines_version_and_records_who_and_what) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 1);
  start_desk();
  auto v = version_of(a1);
  auto r = post_json("/review/api/documents/" + a1 + "/approve",
                     R"({"version":)" + std::to_string(v) + R"(,"fields":{"total":119}})", token_a,
                     "alice");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(std::string{r.json["status"].GetString()}, "approved");
  EXPECT_EQ(r.json["warnings"].Size(), 0u);
  EXPECT_GT(r.json["version"].GetInt64(), v);
  EXPECT_EQ(db->scalar("SELECT structured_data->>'total' FROM document WHERE id = $1", {a1}),
            "119");
  EXPECT_EQ(
      db->scalar("SELECT structured_data->>'invoice_number' FROM document WHERE id = $1", {a1}),
      "INV-1");
  EXPECT_EQ(db->scalar("SELECT needs_human_review::text FROM document WHERE id = $1", {a1}),
            "false");
  EXPECT_EQ(
      db->scalar("SELECT review_status || ' ' || reviewed_by FROM document WHERE id = $1", {a1}),
      "approved alice");
  // The machine's extraction stays on its ingestion; the review row holds before and after.
  EXPECT_EQ(
      db->scalar("SELECT structured_data->>'total' FROM ingestion WHERE document_id = $1", {a1}),
      "120");
  EXPECT_EQ(db->scalar(
                "SELECT reviewer || ' ' || action || ' ' || (changes->'total'->>'from') || '->' || "
                "(changes->'total'->>'to') || ' ' || (machine_data->>'total') || ' ' || "
                "(reviewed_data->>'total') FROM document_review WHERE document_id = $1",
                {a1}),
            "alice approve 120->119 120 119");
  EXPECT_EQ(db->scalar(
                "SELECT outcome || ' ' || worker_id FROM ingestion_event WHERE step = 'review' AND "
                "ingestion_id IN (SELECT id FROM ingestion WHERE document_id = $1)",
                {a1}),
            "approve review");
  // The decision is in the status event stream, in its own transaction.
  EXPECT_EQ(
      db->scalar("SELECT (body::jsonb->'payload'->>'action') || ' ' || "
                 "(body::jsonb->'payload'->>'reviewer') "
                 "|| ' ' || (body::jsonb->'payload'->'changed_fields')::text FROM event_outbox "
                 "WHERE destination = 'events' AND body::jsonb->>'type' = 'REVIEW_COMPLETED' "
                 "AND body::jsonb->>'document_id' = $1",
                 {a1}),
      "approve alice [\"total\"]");
  // Out of the queue.
  EXPECT_EQ(get_json("/review/api/queue", token_a).json["documents"].Size(), 0u);
}

TEST_F(review_api_test, fields_with_text_that_postgresql_refuses_are_a_clear_400) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 1);
  start_desk();
  auto path = "/review/api/documents/" + a1 + "/approve";
  auto v = std::to_string(version_of(a1));
  // JSON that RapidJSON reads but a jsonb column refuses.
  for (std::string name : {R"(Acme\u0000 GmbH)", R"(Acme \udc00GmbH)", "Acme \xff GmbH"}) {
    std::string body = R"({"version":)";
    body.append(v).append(R"(,"fields":{"supplier_name":")").append(name).append("\"}}");
    auto r = post_json(path, body, token_a);
    EXPECT_EQ(r.status, 400) << name << ": " << r.body;
    EXPECT_NE(r.body.find("cannot be stored"), std::string::npos) << r.body;
  }
  EXPECT_EQ(db->scalar("SELECT count(*) FROM document_review"), "0");
  // The same name as text is saved.
  auto ok = post_json(path, R"({"version":)" + v + R"(,"fields":{"supplier_name":"Acme GmbH"}})",
                      token_a);
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST_F(review_api_test, approve_as_is_and_refusals_for_schema_bad_input_and_plausibility_warnings) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 2);
  auto a2 = add_document(tenant_a, "inv02_de_modern.pdf", "gate", 1);
  start_desk();
  auto path = "/review/api/documents/" + a1 + "/approve";
  auto v = std::to_string(version_of(a1));
  // A value of the wrong type: refused by the schema, nothing saved.
  auto bad = post_json(path, R"({"version":)" + v + R"(,"fields":{"total":"a lot"}})", token_a);
  EXPECT_EQ(bad.status, 422) << bad.body;
  EXPECT_NE(bad.body.find("schema"), std::string::npos);
  EXPECT_EQ(
      post_json(path, R"({"version":)" + v + R"(,"fields":{"colour":"red"}})", token_a).status,
      400);
  EXPECT_EQ(post_json(path, R"({"fields":{}})", token_a).status, 400);
  EXPECT_EQ(post_json(path, "not json", token_a).status, 400);
  EXPECT_EQ(post_json(path,
                      R"({"version":1,"fields":{"line_items":)" + std::string(5000, '[')
                          + std::string(5000, ']') + "}}",
                      token_a)
                .status,
            400);
  EXPECT_EQ(post_json(path, std::string(2u << 20, ' '), token_a).status, 413);
  auto form = client().Post(path.c_str(), {{"Authorization", "Bearer " + token_a}}, "version=1",
                            "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 415);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM document_review"), "0");
  EXPECT_EQ(db->scalar("SELECT needs_human_review::text FROM document WHERE id = $1", {a1}),
            "true");

  // A VAT of 50%: a warning, and the approval stands.
  auto warn = post_json(path, R"({"version":)" + v + R"(,"fields":{"vat_amount":50,"total":150}})",
                        token_a);
  ASSERT_EQ(warn.status, 200) << warn.body;
  ASSERT_EQ(warn.json["warnings"].Size(), 1u);
  EXPECT_EQ(std::string{warn.json["warnings"][0]["check"].GetString()}, "vat_rate");
  EXPECT_EQ(
      db->scalar("SELECT warnings->0->>'check' FROM document_review WHERE document_id = $1", {a1}),
      "vat_rate");

  // As is: the machine's data becomes the approved data, with its totals warning.
  auto as_is = post_json("/review/api/documents/" + a2 + "/approve",
                         R"({"version":)" + std::to_string(version_of(a2)) + "}", token_a);
  ASSERT_EQ(as_is.status, 200) << as_is.body;
  EXPECT_EQ(std::string{as_is.json["warnings"][0]["check"].GetString()}, "totals");
  EXPECT_EQ(db->scalar("SELECT changes::text FROM document_review WHERE document_id = $1", {a2}),
            "{}");

  // check: the same validation without saving.
  auto a3 = add_document(tenant_a, "inv03_en_compact.pdf", "gate", 0);
  auto c
      = post_json("/review/api/documents/" + a3 + "/check", R"({"fields":{"total":"x"}})", token_a);
  ASSERT_EQ(c.status, 200);
  EXPECT_FALSE(c.json["valid"].GetBool());
  EXPECT_EQ(db->scalar("SELECT needs_human_review::text FROM document WHERE id = $1", {a3}),
            "true");
}

TEST_F(review_api_test, a_second_save_on_the_same_version_is_refused_and_overwrites_nothing) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 1);
  start_desk();
  auto path = "/review/api/documents/" + a1 + "/approve";
  auto v = std::to_string(version_of(a1));
  auto first
      = post_json(path, R"({"version":)" + v + R"(,"fields":{"total":119}})", token_a, "alice");
  ASSERT_EQ(first.status, 200);
  auto second
      = post_json(path, R"({"version":)" + v + R"(,"fields":{"total":121}})", token_a, "bob");
  EXPECT_EQ(second.status, 409) << second.body;
  EXPECT_NE(second.body.find("changed since you opened it"), std::string::npos) << second.body;
  EXPECT_NE(second.body.find("alice"), std::string::npos) << second.body;
  EXPECT_EQ(db->scalar("SELECT structured_data->>'total' FROM document WHERE id = $1", {a1}),
            "119");
  EXPECT_EQ(db->scalar("SELECT count(*) FROM document_review"), "1");
}

TEST_F(review_api_test, concurrent_saves_on_one_version_let_exactly_one_through) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 1);
  start_desk();
  auto path = "/review/api/documents/" + a1 + "/approve";
  auto v = std::to_string(version_of(a1));
  constexpr int reviewers = 6;
  std::atomic<int> ok{0}, conflict{0}, other{0};
  std::vector<std::thread> threads;
  threads.reserve(reviewers);
  for (int i = 0; i < reviewers; ++i)
    threads.emplace_back([&, i] {
      auto r = post_json(
          path, R"({"version":)" + v + R"(,"fields":{"total":)" + std::to_string(200 + i) + "}}",
          token_a, "r" + std::to_string(i));
      (r.status == 200 ? ok : r.status == 409 ? conflict : other)++;
    });
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(conflict, reviewers - 1);
  EXPECT_EQ(other, 0);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM document_review"), "1");
  EXPECT_EQ(db->scalar("SELECT (structured_data->>'total') = (SELECT reviewed_data->>'total' FROM "
                       "document_review) FROM document WHERE id = $1",
                       {a1}),
            "t");
}

TEST_F(review_api_test, reject_needs_a_reason_and_resolves_the_document) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "failed", 1);
  start_desk();
  auto path = "/review/api/documents/" + a1 + "/reject";
  auto v = std::to_string(version_of(a1));
  EXPECT_EQ(post_json(path, R"({"version":)" + v + "}", token_a).status, 400);
  EXPECT_EQ(post_json(path, R"({"version":)" + v + R"(,"reason":"  "})", token_a).status, 400);
  auto r
      = post_json(path, R"({"version":)" + v + R"(,"reason":"not an invoice"})", token_a, "carol");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(std::string{r.json["status"].GetString()}, "rejected");
  EXPECT_EQ(
      db->scalar(
          "SELECT needs_human_review::text || ' ' || review_status FROM document WHERE id = $1",
          {a1}),
      "false rejected");
  EXPECT_EQ(db->scalar("SELECT reason FROM document_review WHERE document_id = $1", {a1}),
            "not an invoice");
}

TEST_F(review_api_test, reprocess_creates_and_enqueues_a_new_ingestion_and_blocks_saves_meanwhile) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "failed", 1);
  start_desk();
  auto v = version_of(a1);
  auto r = post_json("/review/api/documents/" + a1 + "/reprocess",
                     R"({"version":)" + std::to_string(v) + "}", token_a, "dave");
  ASSERT_EQ(r.status, 200) << r.body;
  std::string ingestion = r.json["ingestion_id"].GetString();
  EXPECT_TRUE(r.json["enqueued"].GetBool());
  EXPECT_EQ(
      db->scalar("SELECT status || ' ' || (source_metadata->>'channel') || ' ' || "
                 "(source_metadata->>'requested_by') || ' ' || (source_metadata->>'file_name') "
                 "FROM ingestion WHERE id = $1",
                 {ingestion}),
      "in-progress review dave inv01_en_classic.pdf");
  EXPECT_EQ(db->scalar("SELECT count(*) FROM queue_message WHERE queue_name = $1 AND body = $2",
                       {queue_name, ingestion}),
            "1");
  // Its work item, written in the save's statement with its message.
  EXPECT_EQ(db->scalar(
                "SELECT stage || ' ' || status || ' ' || document_id || ' ' || tenant_id || ' ' || "
                "attempt_count || ' ' || (claim_token IS NULL) FROM work_item WHERE id = $1",
                {ingestion}),
            "ingest in-progress " + a1 + " " + tenant_a.str() + " 0 true");
  EXPECT_EQ(
      db->scalar("SELECT ingestion_id::text FROM document_review WHERE document_id = $1", {a1}),
      ingestion);
  // Being processed: not in the queue (counted apart), and no save goes through.
  auto q = get_json("/review/api/queue", token_a);
  EXPECT_EQ(q.json["documents"].Size(), 0u);
  EXPECT_EQ(q.json["counts"]["processing"].GetInt64(), 1);
  auto again = post_json("/review/api/documents/" + a1 + "/approve",
                         R"({"version":)" + std::to_string(version_of(a1)) + "}", token_a);
  EXPECT_EQ(again.status, 409);
  EXPECT_NE(again.body.find("being processed"), std::string::npos);
  EXPECT_EQ(post_json("/review/api/documents/" + a1 + "/reprocess",
                      R"({"version":)" + std::to_string(version_of(a1)) + R"(,"provider":"llm"})",
                      token_a)
                .status,
            400);
}

TEST_F(review_api_test,
       reprocess_writes_the_chosen_providers_on_the_new_ingestion_and_the_stage_loads_them) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "failed", 3);
  auto a2 = add_document(tenant_a, "inv02_de_modern.pdf", "gate", 2);
  auto a3 = add_document(tenant_a, "inv03_en_compact.pdf", "failed", 1);
  start_desk();
  auto reprocess = [&](const std::string& document, const std::string& choice) {
    return post_json("/review/api/documents/" + document + "/reprocess",
                     R"({"version":)" + std::to_string(version_of(document)) + choice + "}",
                     token_a, "dave");
  };
  auto llm = reprocess(a1, R"(,"extraction_provider":"llm")");
  ASSERT_EQ(llm.status, 200) << llm.body;
  EXPECT_TRUE(llm.json["transcription_provider"].IsNull()) << llm.body;
  EXPECT_EQ(std::string{llm.json["extraction_provider"].GetString()}, "llm");
  auto both
      = reprocess(a2, R"(,"transcription_provider":"tesseract","extraction_provider":"local")");
  ASSERT_EQ(both.status, 200) << both.body;
  // null (and "") mean the configured one, as leaving the key out does.
  auto none = reprocess(a3, R"(,"transcription_provider":null,"extraction_provider":"")");
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_TRUE(none.json["extraction_provider"].IsNull()) << none.body;

  std::string i1 = llm.json["ingestion_id"].GetString();
  std::string i2 = both.json["ingestion_id"].GetString();
  std::string i3 = none.json["ingestion_id"].GetString();
  auto providers_of = [&](const std::string& table, const std::string& column,
                          const std::string& id) {
    return db->scalar(
        "SELECT COALESCE(transcription_provider, '-') || ' ' || COALESCE(extraction_provider, '-') "
        "FROM "
            + table + " WHERE " + column + " = $1",
        {id});
  };
  EXPECT_EQ(providers_of("ingestion", "id", i1), "- llm");
  EXPECT_EQ(providers_of("ingestion", "id", i2), "tesseract local");
  EXPECT_EQ(providers_of("ingestion", "id", i3), "- -");
  // Beside the decision: the review row, the audit event and REVIEW_COMPLETED.
  EXPECT_EQ(providers_of("document_review", "document_id", a1), "- llm");
  auto detail
      = db->scalar("SELECT detail FROM ingestion_event WHERE step = 'review' AND ingestion_id IN "
                   "(SELECT id FROM ingestion WHERE document_id = $1)",
                   {a2});
  EXPECT_NE(detail.find("transcription provider tesseract, extraction provider local"),
            std::string::npos)
      << detail;
  EXPECT_EQ(
      db->scalar(
          "SELECT COALESCE(body::jsonb->'payload'->>'transcription_provider', 'null') || ' ' || "
          "(body::jsonb->'payload'->>'extraction_provider') FROM event_outbox "
          "WHERE destination = 'events' AND body::jsonb->>'type' = 'REVIEW_COMPLETED' "
          "AND body::jsonb->>'document_id' = $1",
          {a1}),
      "null llm");
  auto doc = get_json("/review/api/documents/" + a1, token_a);
  ASSERT_EQ(doc.json["reviews"].Size(), 1u) << doc.body;
  EXPECT_EQ(std::string{doc.json["reviews"][0]["extraction_provider"].GetString()}, "llm");

  // The ingest stage claims the new ingestions and loads the choice with them.
  pg_work_repository work{db->url(), pg_work_options{1}};
  pg_ingest_repository ingest{db->url(), pg_ingest_options{1}};
  std::vector<claim_request> requests;
  for (auto& id : {i1, i2, i3}) {
    claim_request r;
    r.item = *uuid::parse(id);
    r.token = uuid::v7();
    r.stage = "ingest";
    requests.push_back(r);
  }
  auto claimed = test::await<std::vector<claim_answer>>(
      [&](auto cb) { work.claim(requests, "review-test", std::chrono::seconds{30}, cb); });
  ASSERT_TRUE(claimed) << claimed.error().describe();
  ASSERT_EQ(claimed->size(), 3u);
  for (auto& c : *claimed)
    ASSERT_EQ(c.outcome, claim_outcome::granted) << c.detail;
  std::vector<ingestion_details> loaded;
  for (auto& r : requests) {
    auto d = test::await<ingestion_details>([&](auto cb) { ingest.load(r.item, cb); });
    ASSERT_TRUE(d) << d.error().describe();
    loaded.push_back(*d);
  }
  EXPECT_EQ(loaded[0].transcription_provider, "");
  EXPECT_EQ(loaded[0].extraction_provider, "llm");
  EXPECT_EQ(loaded[1].transcription_provider, "tesseract");
  EXPECT_EQ(loaded[1].extraction_provider, "local");
  EXPECT_EQ(loaded[2].transcription_provider, "");
  EXPECT_EQ(loaded[2].extraction_provider, "");
}

TEST_F(review_api_test, reprocess_refuses_unknown_providers_and_those_this_node_cannot_run) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "failed", 1);
  start_desk();
  auto path = "/review/api/documents/" + a1 + "/reprocess";
  auto v = R"({"version":)" + std::to_string(version_of(a1));
  auto messages = [&] {
    return db->scalar("SELECT count(*) FROM queue_message WHERE queue_name = $1", {queue_name});
  };
  auto messages_before = messages();
  auto unknown = post_json(path, v + R"(,"transcription_provider":"abbyy"})", token_a);
  EXPECT_EQ(unknown.status, 400) << unknown.body;
  EXPECT_EQ(std::string{unknown.json["error"].GetString()}, "review.unknown_provider");
  EXPECT_NE(unknown.body.find("abbyy"), std::string::npos) << unknown.body;
  EXPECT_NE(unknown.body.find("tesseract, document_ai"), std::string::npos) << unknown.body;
  auto unknown_extraction = post_json(path, v + R"(,"extraction_provider":"gpt"})", token_a);
  EXPECT_EQ(unknown_extraction.status, 400);
  EXPECT_NE(unknown_extraction.body.find("local, llm"), std::string::npos)
      << unknown_extraction.body;
  // A provider this node is not configured for: refused here, with what it would need.
  auto unavailable = post_json(
      path, v + R"(,"transcription_provider":"document_ai","extraction_provider":"llm"})", token_a);
  EXPECT_EQ(unavailable.status, 400) << unavailable.body;
  EXPECT_EQ(std::string{unavailable.json["error"].GetString()}, "review.provider_unavailable");
  EXPECT_NE(unavailable.body.find("cannot run the transcription provider"), std::string::npos)
      << unavailable.body;
  EXPECT_NE(unavailable.body.find("INGESTD_DOCUMENT_AI_TOKEN"), std::string::npos)
      << unavailable.body;
  EXPECT_EQ(post_json(path, v + R"(,"extraction_provider":3})", token_a).status, 400);
  EXPECT_EQ(post_json(path, v + R"(,"provider":"llm"})", token_a).status, 400);
  // Nothing was saved or created.
  EXPECT_EQ(db->scalar("SELECT count(*) FROM document_review"), "0");
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion WHERE document_id = $1", {a1}), "1");
  EXPECT_EQ(messages(), messages_before);

  // The same node with Document AI configured takes the choice.
  admin->stop();
  providers.transcription.emplace_back("document_ai");
  start_desk();
  auto ok = post_json(path, v + R"(,"transcription_provider":"document_ai"})", token_a);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(db->scalar("SELECT transcription_provider FROM ingestion WHERE id = $1",
                       {std::string{ok.json["ingestion_id"].GetString()}}),
            "document_ai");
}

TEST_F(review_api_test, approved_data_says_a_person_verified_it_and_the_machines_stays_beside_it) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate-failed", 2);
  auto a2 = add_document(tenant_a, "inv02_de_modern.pdf", "gate-failed", 1);
  // The machine could not vouch for either: not successful, low confidence.
  for (auto& d : {a1, a2}) {
    db->query("UPDATE ingestion SET structured_data = structured_data || "
              "'{\"extraction_successful\": false, \"confidence\": \"low\"}'::jsonb WHERE "
              "document_id = $1",
              {d});
    db->query("UPDATE document SET structured_data = (SELECT structured_data FROM ingestion WHERE "
              "document_id = $1) WHERE id = $1",
              {d});
  }
  start_desk();
  // The two flags of the JSON one query (with the document as $1) answers.
  auto flags = [&](const std::string& sql, const std::string& document) {
    auto json = db->scalar(sql, {document});
    return db->scalar(
        "SELECT ($1::jsonb->>'extraction_successful') || ' ' || ($1::jsonb->>'confidence')",
        {json});
  };
  ASSERT_EQ(flags("SELECT structured_data FROM document WHERE id = $1", a1), "false low");
  auto r
      = post_json("/review/api/documents/" + a1 + "/approve",
                  R"({"version":)" + std::to_string(version_of(a1)) + R"(,"fields":{"total":119}})",
                  token_a, "erin");
  ASSERT_EQ(r.status, 200) << r.body;
  // The document's data (what consumers read) is the reviewer's: verified by a person.
  EXPECT_EQ(flags("SELECT structured_data FROM document WHERE id = $1", a1), "true high");
  EXPECT_EQ(flags("SELECT reviewed_data FROM document_review WHERE document_id = $1", a1),
            "true high");
  // The machine's own verdict stays on its ingestion and in the review row.
  EXPECT_EQ(flags("SELECT structured_data FROM ingestion WHERE document_id = $1", a1), "false low");
  EXPECT_EQ(flags("SELECT machine_data FROM document_review WHERE document_id = $1", a1),
            "false low");
  // Only the reviewer's edits count as changes.
  EXPECT_EQ(
      db->scalar("SELECT string_agg(k, ',') FROM document_review, jsonb_object_keys(changes) AS k "
                 "WHERE document_id = $1",
                 {a1}),
      "total");
  // No failed check about the machine's verdict is left on the page's data.
  auto doc = get_json("/review/api/documents/" + a1, token_a);
  for (auto& f : doc.json["failed_checks"].GetArray()) {
    EXPECT_NE(std::string{f["check"].GetString()}, "low_confidence") << doc.body;
    EXPECT_NE(std::string{f["check"].GetString()}, "extraction_not_successful") << doc.body;
  }
  // The document API says who verified it.
  auto api = intake->document_json(tenant_a, *uuid::parse(a1));
  ASSERT_TRUE(api && *api) << (api ? "no document" : api.error().describe());
  rapidjson::Document json;
  json.Parse((*api)->c_str());
  EXPECT_EQ(std::string{json["review_status"].GetString()}, "approved") << **api;
  EXPECT_EQ(std::string{json["reviewed_by"].GetString()}, "erin") << **api;
  EXPECT_TRUE(json["reviewed_at"].IsString()) << **api;
  EXPECT_EQ(std::string{json["structured_data"]["confidence"].GetString()}, "high") << **api;

  // A reviewer who says otherwise is taken at their word.
  auto own = post_json("/review/api/documents/" + a2 + "/approve",
                       R"({"version":)" + std::to_string(version_of(a2))
                           + R"(,"fields":{"total":119,"confidence":"medium"}})",
                       token_a);
  ASSERT_EQ(own.status, 200) << own.body;
  EXPECT_EQ(flags("SELECT structured_data FROM document WHERE id = $1", a2), "true medium");
}

TEST_F(review_api_test, first_approvals_count_each_fields_reviewed_and_kept_values_per_confidence) {
  // Tenant A: two approvals as the machine read them (one with the total corrected), one
  // rejection, and a document approved a second time after a reprocess. Tenant B: one approval.
  auto kept = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 4);
  auto corrected = add_document(tenant_a, "inv02_de_modern.pdf", "gate", 3);
  auto rejected = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 2);
  auto other = add_document(tenant_b, "inv01_en_classic.pdf", "gate", 1);
  // A value the machine did not give is not a value reviewers kept.
  db->query("UPDATE document SET structured_data = structured_data || '{\"due_date\": null}' "
            "WHERE id = $1",
            {corrected});
  start_desk();
  auto approve = [&](const std::string& doc, const std::string& fields, const std::string& token) {
    auto r = post_json(
        "/review/api/documents/" + doc + "/approve",
        R"({"version":)" + std::to_string(version_of(doc)) + R"(,"fields":)" + fields + "}", token);
    ASSERT_EQ(r.status, 200) << r.body;
  };
  approve(kept, "{}", token_a);
  approve(corrected, R"({"total":119})", token_a);
  approve(other, R"({"invoice_number":"B-7"})", token_b);
  auto r = post_json("/review/api/documents/" + rejected + "/reject",
                     R"({"version":)" + std::to_string(version_of(rejected))
                         + R"(,"reason":"not an invoice"})",
                     token_a);
  ASSERT_EQ(r.status, 200) << r.body;
  // A later review of the first document sees the reviewer's data, not the machine's: not counted.
  db->query("INSERT INTO document_review (document_id, tenant_id, action, reviewer, "
            "based_on_version, machine_data, reviewed_data, changes) SELECT id, tenant_id, "
            "'approve', 'later', review_version, structured_data, structured_data, "
            "'{\"total\": {\"from\": 120, \"to\": 1}}' FROM document WHERE id = $1",
            {kept});

  pg_learning_repository repo{db->url()};
  auto reviews = blocking_call<std::vector<field_reviews>>(
      std::chrono::seconds{10}, "t", "reviews",
      [&](auto cb) { repo.reviews_of(tenant_a, std::move(cb)); });
  ASSERT_TRUE(reviews) << reviews.error().describe();
  std::map<std::string, std::pair<int64_t, int64_t>> by_field;
  for (auto& f : *reviews) {
    EXPECT_EQ(f.confidence, "medium") << f.field;
    by_field[f.field] = {f.reviewed, f.kept};
  }
  EXPECT_EQ(by_field["total"], std::make_pair(int64_t{2}, int64_t{1}));
  EXPECT_EQ(by_field["invoice_number"], std::make_pair(int64_t{2}, int64_t{2}));
  EXPECT_EQ(by_field["line_items"], std::make_pair(int64_t{2}, int64_t{2}));
  EXPECT_EQ(by_field["due_date"], std::make_pair(int64_t{1}, int64_t{1}));
  // The extractor's flags are not values.
  EXPECT_EQ(by_field.count("confidence"), 0U);
  EXPECT_EQ(by_field.count("extraction_successful"), 0U);
  EXPECT_EQ(by_field.count("missing_fields"), 0U);

  auto b = blocking_call<std::vector<field_reviews>>(
      std::chrono::seconds{10}, "t", "reviews",
      [&](auto cb) { repo.reviews_of(tenant_b, std::move(cb)); });
  ASSERT_TRUE(b) << b.error().describe();
  for (auto& f : *b)
    EXPECT_EQ(f.kept, f.field == "invoice_number" ? 0 : 1) << f.field;
}

TEST_F(review_api_test, corrections_teach_supplier_facts_that_reviewers_list_and_forget) {
  // The machine read supplier "Acme GmbH" with VAT id DE123456789 on each.
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 3);
  auto a2 = add_document(tenant_a, "inv02_de_modern.pdf", "gate", 2);
  auto b1 = add_document(tenant_b, "inv01_en_classic.pdf", "gate", 1);
  start_desk();
  auto approve = [&](const std::string& doc, const std::string& fields, const std::string& token,
                     const std::string& who) {
    auto r = post_json("/review/api/documents/" + doc + "/approve",
                       R"({"version":)" + std::to_string(version_of(doc)) + R"(,"fields":)" + fields
                           + "}",
                       token, who);
    ASSERT_EQ(r.status, 200) << r.body;
  };
  // Day and month swapped (2024-03-01 is 1 March; the reviewer reads 3 January).
  approve(a1, R"({"supplier_name":"ACME Widgets GmbH","invoice_date":"2024-01-03"})", token_a,
          "erin");
  approve(a2, R"({"supplier_name":"ACME Widgets GmbH"})", token_a, "frank");
  approve(b1, R"({"supplier_name":"Acme B-Side"})", token_b, "gina");

  auto listed = get_json("/review/api/knowledge", token_a);
  ASSERT_EQ(listed.status, 200) << listed.body;
  // Under each of the machine's keys for the supplier, its VAT id and its name.
  auto& facts = listed.json["facts"];
  ASSERT_EQ(facts.Size(), 4U) << listed.body;
  for (rapidjson::SizeType i = 0; i < 4; ++i)
    EXPECT_EQ(std::string{facts[i]["supplier"].GetString()},
              i < 2 ? "name:acmegmbh" : "vat:DE123456789");
  EXPECT_EQ(std::string{facts[2]["field"].GetString()}, "date_order");
  EXPECT_EQ(std::string{facts[2]["value"].GetString()}, "day_month_swapped");
  EXPECT_EQ(facts[2]["reviews"].GetInt64(), 1);
  EXPECT_EQ(std::string{facts[3]["field"].GetString()}, "supplier_name");
  EXPECT_EQ(std::string{facts[3]["value"].GetString()}, "ACME Widgets GmbH");
  EXPECT_EQ(facts[3]["reviews"].GetInt64(), 2) << "taught twice";
  EXPECT_EQ(std::string{facts[3]["learned_by"].GetString()}, "frank");
  // Each tenant sees its own; the node reads the same through its port.
  auto b = get_json("/review/api/knowledge", token_b);
  ASSERT_EQ(b.json["facts"].Size(), 2U) << b.body;
  EXPECT_EQ(std::string{b.json["facts"][0]["value"].GetString()}, "Acme B-Side");
  pg_learning_repository repo{db->url()};
  auto read = blocking_call<std::vector<supplier_fact>>(
      std::chrono::seconds{10}, "t", "facts",
      [&](auto cb) { repo.facts_of(tenant_a, std::move(cb)); });
  ASSERT_TRUE(read) << read.error().describe();
  EXPECT_EQ(read->size(), 4U);

  // The page lists them.
  auto page = client().Get("/review/knowledge", bearer(token_a));
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("ACME Widgets GmbH"), std::string::npos);
  EXPECT_NE(page->body.find("2 reviews"), std::string::npos);

  // Forgetting: another tenant's token cannot, the fact's tenant can, once.
  auto forget = "/review/api/knowledge/forget?tenant=" + tenant_a.str()
                + "&supplier=vat:DE123456789&field=supplier_name";
  EXPECT_EQ(post_json(forget, "", token_b).status, 404);
  EXPECT_EQ(post_json(forget, "", token_a).status, 200);
  EXPECT_EQ(post_json(forget, "", token_a).status, 404);
  EXPECT_EQ(post_json("/review/api/knowledge/forget?tenant=" + tenant_a.str(), "", token_a).status,
            400);
  EXPECT_EQ(get_json("/review/api/knowledge", token_a).json["facts"].Size(), 3U);
}

TEST_F(review_api_test, page_images_are_rendered_once_and_cached_in_object_storage) {
  auto pdf = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 2);
  auto scan = add_document(tenant_a, "inv03_en_compact_scan.tiff", "gate", 1);
  start_desk();
  auto path = "/review/api/documents/" + pdf + "/pages/0.png";
  auto first = client().Get(path.c_str(), bearer(token_a));
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  EXPECT_EQ(first->get_header_value("Content-Type"), "image/png");
  EXPECT_EQ(first->body.substr(0, 4), "\x89PNG");
  // Under the document's tenant.
  auto cached = root + "/" + storage_keys::page_render(tenant_a.str(), pdf, 0);
  ASSERT_TRUE(std::filesystem::exists(cached));
  // The cached object answers the next request.
  {
    std::ofstream out{cached, std::ios::binary | std::ios::app};
    out << "cached";
  }
  auto second = client().Get(path.c_str(), bearer(token_a));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->body.size(), first->body.size() + 6);
  auto missing
      = client().Get(("/review/api/documents/" + pdf + "/pages/7.png").c_str(), bearer(token_a));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  // A TIFF scan is shown as PNG; another tenant's is a 404.
  auto tiff
      = client().Get(("/review/api/documents/" + scan + "/pages/0.png").c_str(), bearer(token_a));
  ASSERT_TRUE(tiff);
  EXPECT_EQ(tiff->status, 200);
  EXPECT_EQ(tiff->body.substr(0, 4), "\x89PNG");
  auto other = client().Get(path.c_str(), bearer(token_b));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
}

TEST_F(review_api_test, an_office_documents_pages_are_those_of_its_pdf) {
  intake_item item;
  item.tenant_id = tenant_a;
  item.source.uploaded_by = uuid::v7();
  item.bytes = "<!DOCTYPE html><html><body><p>Invoice INV-9</p></body></html>";
  item.name = "invoice.html";
  item.channel = "test";
  auto in = intake->submit(item);
  ASSERT_TRUE(in) << in.error().describe();
  EXPECT_EQ(in->mime_type, "text/html");
  auto ingestion = in->ingestion_id.str();
  auto doc = in->document_id.str();
  db->query("UPDATE ingestion SET structured_data = $2::jsonb, valid_structured_data = false "
            "WHERE id = $1",
            {ingestion, test::unreconciled_invoice});
  db->query("UPDATE work_item SET status = 'completed', completed_at = now() WHERE id = $1",
            {ingestion});
  start_desk();
  auto path = "/review/api/documents/" + doc + "/pages/0.png";
  // Not converted yet: no page to show.
  auto before = client().Get(path.c_str(), bearer(token_a));
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 404) << before->body;
  // The PDF the ingest stage keeps beside it (a corpus PDF standing in for the conversion's).
  auto key = storage_keys::preprocessed(tenant_a.str(), ingestion, "pdf");
  auto put = blocking_call<void>(std::chrono::seconds{10}, "t", "store", [&](auto cb) {
    store->put(key, read_file(test::source_dir() + "/tests/fixtures/corpus/inv01_en_classic.pdf"),
               "application/pdf", cb);
  });
  ASSERT_TRUE(put);
  db->query("UPDATE ingestion SET preprocessed_file_path = $2 WHERE id = $1", {ingestion, key});
  auto page = client().Get(path.c_str(), bearer(token_a));
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200) << page->body;
  EXPECT_EQ(page->body.substr(0, 4), "\x89PNG");
  // Its PDF is its pages, not a "preprocessed scan" of its own.
  auto pre = client().Get((path + "?variant=preprocessed").c_str(), bearer(token_a));
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->body.substr(0, 4), "\x89PNG");
}

TEST_F(review_api_test, an_open_desk_serves_the_default_tenant_on_loopback_only) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 1);
  add_document(tenant_b, "inv02_de_modern.pdf", "gate", 1);
  start_desk("");
  auto q = get_json("/review/api/queue", "");
  ASSERT_EQ(q.status, 200);
  ASSERT_EQ(q.json["documents"].Size(), 1u);
  EXPECT_EQ(std::string{q.json["documents"][0]["document_id"].GetString()}, a1);
  auto tokens = http_server::tenant_tokens::parse("", tenant_a, "INGESTD_REVIEW_TOKEN");
  ASSERT_TRUE(tokens);
  EXPECT_TRUE(check_review_exposure("127.0.0.1", *tokens));
  auto exposed = check_review_exposure("0.0.0.0", *tokens);
  ASSERT_FALSE(exposed);
  EXPECT_EQ(exposed.error().code, "review.unauthenticated");
  EXPECT_NE(exposed.error().message.find("INGESTD_REVIEW_TOKEN"), std::string::npos);
  auto with_token = http_server::tenant_tokens::parse("secret", tenant_a, "INGESTD_REVIEW_TOKEN");
  ASSERT_TRUE(with_token);
  EXPECT_TRUE(check_review_exposure("0.0.0.0", *with_token));
}

} // namespace
} // namespace ingestd
