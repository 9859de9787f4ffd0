// The embedded migrations on a fresh schema: applied once, recorded, a no-op the second time;
// the document trigger for completed and failed ingestions; the work item's status followed by its
// ingestion; the tables' constraints, migration 015's among them; the busy tables' autoanalyze.
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "adapters/db/migrator.hpp"
#include "messages/uuid.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using ingestd::test::pg_schema;

namespace {

std::string sqlstate_of(pg_schema& db, const std::string& sql,
                        const std::vector<std::optional<std::string>>& params = {}) {
  try {
    db.query(sql, params);
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    return what.substr(1, 5);
  }
  return "ok";
}

std::string new_document(pg_schema& db) {
  auto id = uuid::v7().str();
  db.query("INSERT INTO document (id, tenant_id, content_hash, file_path) VALUES ($1, $2, $3, $4)",
           {id, uuid::v4().str(), uuid::v4().str(), "documents/" + id + ".pdf"});
  return id;
}

std::string new_ingestion(pg_schema& db, const std::string& document_id) {
  auto id = uuid::v7().str();
  db.query("INSERT INTO ingestion (id, document_id, uploaded_by) VALUES ($1, $2, $3)",
           {id, document_id, uuid::v4().str()});
  return id;
}

/// The ingestion's work item of the ingest stage.
void new_work_item(pg_schema& db, const std::string& ingestion_id) {
  db.query("INSERT INTO work_item (id, stage, document_id, tenant_id) SELECT i.id, 'ingest', "
           "i.document_id, d.tenant_id FROM ingestion AS i JOIN document AS d ON d.id = "
           "i.document_id WHERE i.id = $1",
           {ingestion_id});
}

} // namespace

TEST(migrations, apply_once_then_nothing) {
  pg_schema db{false};
  auto& all = embedded_migrations();
  ASSERT_FALSE(all.empty());
  auto first = migrate(db.url(), all);
  ASSERT_TRUE(first) << first.error().describe();
  EXPECT_EQ(first->applied.size(), all.size());
  EXPECT_EQ(first->applied.front(), "001_initial.sql");
  EXPECT_EQ(first->version, all.back().version);
  auto second = migrate(db.url(), all);
  ASSERT_TRUE(second) << second.error().describe();
  EXPECT_TRUE(second->applied.empty());
  EXPECT_EQ(second->version, all.back().version);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM schema_migrations"), std::to_string(all.size()));
  EXPECT_EQ(db.scalar("SELECT name FROM schema_migrations WHERE version = 1"), "001_initial.sql");
  // Schema-agnostic: everything landed in the test's schema, nothing in public.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename IN "
                      "('document', 'ingestion', 'audit_trail', 'queue_message', "
                      "'schema_migrations')",
                      {db.name()}),
            "5");
}

TEST(migrations, concurrent_migrators_take_turns) {
  pg_schema db{false};
  auto& all = embedded_migrations();
  std::optional<result<migrate_report>> a, b;
  std::thread ta{[&] { a.emplace(migrate(db.url(), all)); }};
  std::thread tb{[&] { b.emplace(migrate(db.url(), all)); }};
  ta.join();
  tb.join();
  ASSERT_TRUE(*a) << a->error().describe();
  ASSERT_TRUE(*b) << b->error().describe();
  EXPECT_EQ((*a)->applied.size() + (*b)->applied.size(), all.size());
  EXPECT_EQ(db.scalar("SELECT count(*) FROM schema_migrations"), std::to_string(all.size()));
}

// Migration 003 creates pg_trgm once per database (in public): migrators of two schemas at once
// both succeed, and both schemas' trigram index reaches it.
TEST(migrations, concurrent_migrators_in_two_schemas_share_the_extension) {
  pg_schema one{false};
  pg_schema two{false};
  auto& all = embedded_migrations();
  std::optional<result<migrate_report>> a, b;
  std::thread ta{[&] { a.emplace(migrate(one.url(), all)); }};
  std::thread tb{[&] { b.emplace(migrate(two.url(), all)); }};
  ta.join();
  tb.join();
  ASSERT_TRUE(*a) << a->error().describe();
  ASSERT_TRUE(*b) << b->error().describe();
  EXPECT_EQ((*a)->applied.size(), all.size());
  EXPECT_EQ((*b)->applied.size(), all.size());
  for (auto* db : {&one, &two})
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_indexes WHERE schemaname = $1 "
                         "AND indexname = 'document_match_trgm_idx'",
                         {db->name()}),
              "1");
  EXPECT_EQ(one.scalar("SELECT extnamespace::regnamespace::text FROM pg_extension "
                       "WHERE extname = 'pg_trgm'"),
            "public");
}

TEST(migrations, failing_migration_is_rolled_back_and_reported) {
  pg_schema db{false};
  auto all = embedded_migrations();
  all.push_back(migration{999, "999_broken.sql", "CREATE TABLE half_done (x int); SELECT 1/0;"});
  auto res = migrate(db.url(), all);
  ASSERT_FALSE(res);
  EXPECT_EQ(res.error().code, "pg.22012");
  EXPECT_TRUE(res.error().permanent());
  EXPECT_NE(res.error().message.find("999_broken.sql"), std::string::npos);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = "
                      "'half_done'",
                      {db.name()}),
            "0");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM schema_migrations WHERE version = 999"), "0");
  // The good ones before it stay applied.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM schema_migrations"),
            std::to_string(embedded_migrations().size()));
}

class schema_test : public ingestd::test::postgres_test {};

TEST_F(schema_test, trigger_copies_result_on_completion) {
  auto doc = new_document(*db);
  auto ing = new_ingestion(*db, doc);
  db->query("UPDATE ingestion SET status = 'completed', structured_data = $2::jsonb, "
            "valid_structured_data = true, completed_at = now() WHERE id = $1",
            {ing, R"({"invoice_number": "INV-1", "total": 12.5})"});
  auto row = db->query("SELECT structured_data->>'invoice_number', needs_human_review FROM "
                       "document WHERE id = $1",
                       {doc});
  EXPECT_EQ(row.at(0).at(0).value_or("NULL"), "INV-1");
  EXPECT_EQ(row.at(0).at(1).value_or("NULL"), "f");

  // A completed ingestion whose data is flagged invalid needs review.
  auto doc2 = new_document(*db);
  auto ing2 = new_ingestion(*db, doc2);
  db->query("UPDATE ingestion SET status = 'completed', structured_data = '{\"a\": 1}', "
            "valid_structured_data = false WHERE id = $1",
            {ing2});
  EXPECT_EQ(db->scalar("SELECT needs_human_review FROM document WHERE id = $1", {doc2}), "t");
  EXPECT_EQ(db->scalar("SELECT structured_data->>'a' FROM document WHERE id = $1", {doc2}), "1");
}

TEST_F(schema_test, trigger_flags_review_on_failure) {
  auto doc = new_document(*db);
  auto ing = new_ingestion(*db, doc);
  // A failure: valid_structured_data stays NULL.
  db->query("UPDATE ingestion SET status = 'failed', completed_at = now() WHERE id = $1", {ing});
  EXPECT_EQ(db->scalar("SELECT valid_structured_data IS NULL FROM ingestion WHERE id = $1", {ing}),
            "t");
  EXPECT_EQ(db->scalar("SELECT needs_human_review FROM document WHERE id = $1", {doc}), "t");
  EXPECT_EQ(db->scalar("SELECT structured_data IS NULL FROM document WHERE id = $1", {doc}), "t");
}

TEST_F(schema_test, trigger_ignores_in_progress_updates) {
  auto doc = new_document(*db);
  auto ing = new_ingestion(*db, doc);
  db->query("UPDATE ingestion SET structured_data = '{\"partial\": true}', "
            "valid_structured_data = false WHERE id = $1",
            {ing});
  EXPECT_EQ(db->scalar("SELECT needs_human_review FROM document WHERE id = $1", {doc}), "f");
  EXPECT_EQ(db->scalar("SELECT structured_data IS NULL FROM document WHERE id = $1", {doc}), "t");
}

TEST_F(schema_test, failure_keeps_an_earlier_result) {
  auto doc = new_document(*db);
  auto first = new_ingestion(*db, doc);
  db->query("UPDATE ingestion SET status = 'completed', structured_data = '{\"v\": 1}', "
            "valid_structured_data = true WHERE id = $1",
            {first});
  auto second = new_ingestion(*db, doc);
  db->query("UPDATE ingestion SET status = 'failed' WHERE id = $1", {second});
  EXPECT_EQ(db->scalar("SELECT structured_data->>'v' FROM document WHERE id = $1", {doc}), "1");
  EXPECT_EQ(db->scalar("SELECT needs_human_review FROM document WHERE id = $1", {doc}), "t");
}

TEST_F(schema_test, source_xor_constraint) {
  auto doc = new_document(*db);
  auto sql = "INSERT INTO ingestion (id, document_id, doc_source_id, uploaded_by) "
             "VALUES ($1, $2, $3, $4)";
  EXPECT_EQ(sqlstate_of(*db, sql, {uuid::v7().str(), doc, uuid::v4().str(), uuid::v4().str()}),
            "23514");
  EXPECT_EQ(sqlstate_of(*db, sql, {uuid::v7().str(), doc, std::nullopt, std::nullopt}), "23514");
  EXPECT_EQ(sqlstate_of(*db, sql, {uuid::v7().str(), doc, uuid::v4().str(), std::nullopt}), "ok");
  EXPECT_EQ(sqlstate_of(*db, sql, {uuid::v7().str(), doc, std::nullopt, uuid::v4().str()}), "ok");
}

TEST_F(schema_test, status_constraint) {
  auto doc = new_document(*db);
  auto ing = new_ingestion(*db, doc);
  EXPECT_EQ(db->scalar("SELECT status FROM ingestion WHERE id = $1", {ing}), "in-progress");
  EXPECT_EQ(sqlstate_of(*db, "UPDATE ingestion SET status = 'done' WHERE id = $1", {ing}), "23514");
  EXPECT_EQ(sqlstate_of(*db, "UPDATE ingestion SET status = NULL WHERE id = $1", {ing}), "23502");
  for (auto s : {"completed", "failed", "in-progress"})
    EXPECT_EQ(sqlstate_of(*db, "UPDATE ingestion SET status = $2 WHERE id = $1", {ing, s}), "ok");
}

// Migration 013: the providers a reprocess chose, NULL (as configured) or a known name.
TEST_F(schema_test, provider_choice_constraints) {
  auto doc = new_document(*db);
  auto ing = new_ingestion(*db, doc);
  EXPECT_EQ(db->scalar("SELECT COALESCE(transcription_provider, 'null') || ' ' || "
                       "COALESCE(extraction_provider, 'null') FROM ingestion WHERE id = $1",
                       {ing}),
            "null null");
  for (auto p : {"tesseract", "document_ai"})
    EXPECT_EQ(sqlstate_of(*db, "UPDATE ingestion SET transcription_provider = $2 WHERE id = $1",
                          {ing, p}),
              "ok");
  for (auto p : {"local", "llm"})
    EXPECT_EQ(
        sqlstate_of(*db, "UPDATE ingestion SET extraction_provider = $2 WHERE id = $1", {ing, p}),
        "ok");
  EXPECT_EQ(
      sqlstate_of(*db, "UPDATE ingestion SET transcription_provider = 'llm' WHERE id = $1", {ing}),
      "23514");
  EXPECT_EQ(
      sqlstate_of(*db, "UPDATE ingestion SET extraction_provider = 'openai' WHERE id = $1", {ing}),
      "23514");
  EXPECT_EQ(
      sqlstate_of(*db, "UPDATE ingestion SET extraction_provider = NULL WHERE id = $1", {ing}),
      "ok");
}

TEST_F(schema_test, content_hash_unique_per_tenant) {
  auto tenant = uuid::v4().str();
  auto sql = "INSERT INTO document (id, tenant_id, content_hash, file_path) VALUES ($1, $2, $3, "
             "'documents/x.pdf')";
  EXPECT_EQ(sqlstate_of(*db, sql, {uuid::v7().str(), tenant, "abc"}), "ok");
  EXPECT_EQ(sqlstate_of(*db, sql, {uuid::v7().str(), tenant, "abc"}), "23505");
  EXPECT_EQ(sqlstate_of(*db, sql, {uuid::v7().str(), uuid::v4().str(), "abc"}), "ok");
}

TEST_F(schema_test, ingestion_needs_an_existing_document) {
  EXPECT_EQ(sqlstate_of(*db,
                        "INSERT INTO ingestion (id, document_id, uploaded_by) VALUES ($1, $2, $3)",
                        {uuid::v7().str(), uuid::v7().str(), uuid::v4().str()}),
            "23503");
}

TEST_F(schema_test, dequeue_uses_the_queue_index) {
  // A planner trap: the dequeue must use its index, not walk the primary key.
  db->query("INSERT INTO queue_message (id, queue_name, body) SELECT gen_random_uuid(), "
            "'q' || (g % 50), 'b' FROM generate_series(1, 5000) AS g");
  db->query("ANALYZE queue_message");
  auto plan = db->query("EXPLAIN SELECT id FROM queue_message WHERE queue_name = 'q1' AND "
                        "visible_at <= now() ORDER BY visible_at, id LIMIT 10 FOR UPDATE SKIP "
                        "LOCKED");
  std::string text;
  for (auto& row : plan)
    text += row.at(0).value_or("") + "\n";
  EXPECT_NE(text.find("queue_message_dequeue_idx"), std::string::npos) << text;
}

// Migration 015: the ingestion's status follows its work item's, and the document follows the
// ingestion (update_document_from_ingestion).
TEST_F(schema_test, an_ingestions_status_follows_its_work_item) {
  auto doc = new_document(*db);
  auto ing = new_ingestion(*db, doc);
  new_work_item(*db, ing);
  db->query("UPDATE ingestion SET structured_data = '{\"v\": 2}', valid_structured_data = false "
            "WHERE id = $1",
            {ing});
  EXPECT_EQ(db->scalar("SELECT needs_human_review FROM document WHERE id = $1", {doc}), "f");
  db->query("UPDATE work_item SET status = 'completed', completed_at = now() - interval '1 minute' "
            "WHERE id = $1",
            {ing});
  EXPECT_EQ(
      db->scalar("SELECT status || ' ' || (completed_at < now() - interval '50 s') FROM ingestion "
                 "WHERE id = $1",
                 {ing}),
      "completed true");
  EXPECT_EQ(
      db->scalar(
          "SELECT structured_data->>'v' || ' ' || needs_human_review FROM document WHERE id = $1",
          {doc}),
      "2 true");
  // A skip carries its reason; a final status without a time of its own gets now().
  auto skipped = new_ingestion(*db, new_document(*db));
  new_work_item(*db, skipped);
  db->query("UPDATE work_item SET status = 'skipped' WHERE id = $1", {skipped});
  EXPECT_EQ(
      db->scalar(
          "SELECT status || ' ' || skip_reason || ' ' || (completed_at IS NOT NULL) FROM ingestion "
          "WHERE id = $1",
          {skipped}),
      "skipped known_file true");
  for (auto status : {"failed", "cancelled"}) {
    auto id = new_ingestion(*db, new_document(*db));
    new_work_item(*db, id);
    db->query("UPDATE work_item SET status = $2 WHERE id = $1", {id, status});
    EXPECT_EQ(
        db->scalar("SELECT status || ' ' || (skip_reason IS NULL) FROM ingestion WHERE id = $1",
                   {id}),
        std::string{status} + " true");
  }
  // Changes that leave the status alone leave the ingestion alone.
  auto running = new_ingestion(*db, new_document(*db));
  new_work_item(*db, running);
  db->query("UPDATE work_item SET claim_token = gen_random_uuid(), lease_expires_at = now() WHERE "
            "id = $1",
            {running});
  EXPECT_EQ(
      db->scalar("SELECT status || ' ' || (completed_at IS NULL) FROM ingestion WHERE id = $1",
                 {running}),
      "in-progress true");
}

TEST_F(schema_test, work_item_constraints) {
  auto doc = new_document(*db);
  auto ing = new_ingestion(*db, doc);
  new_work_item(*db, ing);
  for (auto bad : {"UPDATE work_item SET status = 'done' WHERE id = $1",
                   "UPDATE work_item SET stage = 'extract' WHERE id = $1",
                   "UPDATE work_item SET priority = 101 WHERE id = $1",
                   "UPDATE work_item SET priority = -1 WHERE id = $1",
                   "UPDATE work_item SET size_class = 'huge' WHERE id = $1",
                   "UPDATE work_item SET attempt_count = -1 WHERE id = $1",
                   "UPDATE work_item SET crash_count = -1 WHERE id = $1",
                   "UPDATE work_item SET class_attempts_base = -1 WHERE id = $1",
                   "UPDATE work_item SET error_class = 'fatal' WHERE id = $1"})
    EXPECT_EQ(sqlstate_of(*db, bad, {ing}), "23514") << bad;
  for (auto good : {"UPDATE work_item SET error_class = 'claim_lost' WHERE id = $1",
                    "UPDATE work_item SET error_class = 'poison' WHERE id = $1",
                    "UPDATE work_item SET size_class = 'large' WHERE id = $1",
                    "UPDATE work_item SET priority = 0 WHERE id = $1",
                    "UPDATE work_item SET stage = 'unpack' WHERE id = $1"})
    EXPECT_EQ(sqlstate_of(*db, good, {ing}), "ok") << good;
  // One item per subject; a document that exists.
  EXPECT_EQ(
      sqlstate_of(
          *db,
          "INSERT INTO work_item (id, stage, document_id, tenant_id) VALUES ($1, 'ingest', $2, "
          "gen_random_uuid())",
          {ing, doc}),
      "23505");
  EXPECT_EQ(
      sqlstate_of(
          *db,
          "INSERT INTO work_item (id, stage, document_id, tenant_id) VALUES (gen_random_uuid(), "
          "'match', gen_random_uuid(), gen_random_uuid())"),
      "23503");
  // The event sinks: the notifier's name is allowed, others are not.
  EXPECT_EQ(
      sqlstate_of(*db,
                  "INSERT INTO event_sink (name, types) VALUES ('notify', '{INGESTION_FAILED}')"),
      "ok");
  EXPECT_EQ(sqlstate_of(*db, "INSERT INTO event_sink (name) VALUES ('pager')"), "23514");
}

// Migration 034: the tables every document writes several times are analyzed after many changes,
// not at every round of autovacuum's launcher; the document table, whose statistics plan
// matching's candidate queries, keeps PostgreSQL's default.
TEST_F(schema_test, busy_tables_are_analyzed_after_many_changes_and_documents_as_by_default) {
  auto threshold = [&](const std::string& table) {
    return db->scalar(
        "SELECT COALESCE((SELECT split_part(o, '=', 2) FROM unnest(c.reloptions) AS o "
        "WHERE o LIKE 'autovacuum_analyze_threshold=%'), 'default') FROM pg_class "
        "AS c WHERE c.oid = $1::regclass",
        {table});
  };
  EXPECT_EQ(threshold("ingestion"), "50000");
  EXPECT_EQ(threshold("work_item"), "50000");
  EXPECT_EQ(threshold("audit_trail"), "50000"); // migration 035: a row per job, like ingestion
  EXPECT_EQ(threshold("event_outbox"), "500000");
  EXPECT_EQ(threshold("document"), "default");
  // The queue table keeps its own (migration 001): analyzed after 500 changes, at any size.
  EXPECT_EQ(threshold("queue_message"), "500");
}

// Migration 036: an event's body is built as text, character for character what jsonb rendered,
// whatever its parts hold (quotes, control characters, non-ASCII text, nulls, nested payloads).
TEST_F(schema_test, an_event_body_is_the_text_jsonb_rendered) {
  struct parts {
    std::optional<std::string> tenant, ingestion;
    std::string type, payload;
  };
  for (const auto& p : std::vector<parts>{
           {uuid::v7().str(), uuid::v7().str(), "INGESTION_COMPLETED",
            R"({"model": "x", "valid_structured_data": true})"},
           {std::nullopt, std::nullopt, "DOCUMENT_ADDED", "{}"},
           {uuid::v7().str(), std::nullopt, "A \"quoted\" \\ type\t\u00e9",
            R"({"error": "line\nbreak \"q\" \u0001", "nested": {"list": [1, 2.5, null, "é"]}})"}}) {
    auto same = db->scalar(
        "WITH b AS (SELECT gen_random_uuid() AS id, gen_random_uuid() AS doc), "
        "t AS (SELECT ingestd_event_body(b.id, $1, $2::uuid, b.doc, $3::uuid, $4::jsonb) AS body, "
        "             jsonb_build_object('id', b.id, 'type', $1, 'time', 'T', 'tenant_id', "
        "                                $2::uuid, 'document_id', b.doc, 'ingestion_id', $3::uuid, "
        "                                'payload', $4::jsonb)::text AS rendered FROM b) "
        "SELECT regexp_replace(body, '\"time\": \"[0-9T:.Z-]+\"', '\"time\": \"T\"') = rendered "
        "FROM t",
        {p.type, p.tenant, p.ingestion, p.payload});
    EXPECT_EQ(same, "t") << p.type;
  }
}
