// Migration 015 (config/migrations/015_work_items.sql) applied to a database of migration 014
// holding rows in every state: ingestions queued, claimed under a live lease, crashed (token set,
// lease run out), completed, failed, poisoned, skipped, cancelled, in the large class, with a
// cancel request, of the unpack stage; documents whose matching is pending, in progress, crashed,
// succeeded, failed, and never queued. Every row is carried over to work_item with nothing lost
// (statuses, attempts, tokens, leases, classes, priorities, errors, times), the view
// document_matching shows each document's matching as the columns did, the moved columns and
// their triggers are gone, nothing is emitted, and the claims work on the carried-over rows.
#include <algorithm>

#include <gtest/gtest.h>

#include "adapters/db/migrator.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::migrated_to;
using ingestd::test::pg_row;
using ingestd::test::pg_schema;

namespace {

/// The columns migration 015 moves from ingestion to work_item.
const char* const moved_ingestion_columns
    = "{claim_token,lease_expires_at,claimed_by,started_at,attempt_count,last_error,error_class,"
      "due_at,"
      "message_seen_at,priority,size_class,class_attempts_base,cancel_requested_at,stage}";
/// The columns it drops from document (their content is the match stage's work items).
const char* const moved_document_columns
    = "{matching_status,matching_error,matching_attempts,matching_failed_at,matching_claim_token,"
      "matching_claimed_by,matching_lease_expires_at,matching_started_at,matching_message_seen_at}";

/// The claim columns of an ingestion (before) or of its work item (after), in the same order.
const char* const claim_columns = "id::text, stage, document_id::text, status, claim_token::text, "
                                  "claimed_by, lease_expires_at::text, "
                                  "started_at::text, attempt_count::text, priority::text, "
                                  "size_class, class_attempts_base::text, last_error, "
                                  "error_class, cancel_requested_at::text, due_at::text, "
                                  "message_seen_at::text, created_at::text, "
                                  "completed_at::text";

class migration_015_test : public ::testing::Test {
protected:
  void SetUp() override {
    try {
      db = std::make_unique<pg_schema>(migrated_to{14});
    } catch (const std::exception& e) {
      FAIL() << e.what();
    }
  }

  /// A document of migration 014 with its matching columns: `matching` NULL (never queued),
  /// 'pending', 'in-progress', 'succeeded' or 'failed', and the rest as given.
  std::string document(const std::string& tenant, const std::string& matching = "",
                       const std::string& extra_columns = "",
                       const std::string& extra_values = "") {
    auto id = uuid::v7().str();
    db->query("INSERT INTO document (id, tenant_id, content_hash, file_path, structured_data, "
              "created_at, "
              "matching_status"
                  + extra_columns
                  + ") VALUES ($1, $2, $3, $4, '{\"total\": 1}', "
                    "now() - interval '3 days', $5"
                  + extra_values + ")",
              {id, tenant, uuid::v4().str(), "documents/" + id + ".pdf",
               matching.empty() ? std::optional<std::string>{} : matching});
    return id;
  }

  /// An ingestion of migration 014 of `document`, with its claim columns as given.
  std::string ingestion(const std::string& document, const std::string& columns,
                        const std::string& values) {
    auto id = uuid::v7().str();
    db->query("INSERT INTO ingestion (id, document_id, uploaded_by, created_at, source_metadata"
                  + columns
                  + ") VALUES ($1, $2, gen_random_uuid(), now() - interval '2 days', "
                    "'{\"file_name\": \"f.pdf\"}'"
                  + values + ")",
              {id, document});
    return id;
  }

  std::vector<pg_row> rows(const std::string& sql) { return db->query(sql); }

  std::unique_ptr<pg_schema> db;
};

} // namespace

TEST_F(migration_015_test, every_row_is_carried_over_to_work_items_and_the_view_with_nothing_lost) {
  auto tenant = uuid::v4().str();
  auto other_tenant = uuid::v4().str();
  // Ingestions in every state of migration 014.
  auto d1 = document(tenant);
  auto queued
      = ingestion(d1, ", attempt_count, last_error, error_class, due_at, message_seen_at, priority",
                  ", 1, 'http_503: busy', 'transient', now() + interval '5 minutes', "
                  "now() - interval '1 minute', 20");
  auto held = ingestion(
      document(tenant), ", claim_token, lease_expires_at, claimed_by, started_at, message_seen_at",
      ", gen_random_uuid(), now() + interval '5 minutes', 'w-live', now() - interval '1 minute', "
      "now() - interval '30 seconds'");
  auto crashed = ingestion(
      document(tenant),
      ", claim_token, lease_expires_at, claimed_by, started_at, attempt_count, last_error",
      ", gen_random_uuid(), now() - interval '10 minutes', 'w-dead', now() - interval '20 "
      "minutes', "
      "2, 'worker.crash: the claim of w-old expired'");
  auto completed = ingestion(
      document(tenant),
      ", status, attempt_count, completed_at, structured_data, valid_structured_data, "
      "transcription_file_path, extraction_model, started_at",
      ", 'completed', 1, now() - interval '1 hour', '{\"total\": 2}', true, "
      "'ingestions/x/transcription-output.json', 'local-rules', now() - interval '61 minutes'");
  auto failed = ingestion(
      document(tenant), ", status, attempt_count, completed_at, last_error, error_class",
      ", 'failed', 3, now() - interval '2 hours', 'ocr.corrupt_file: not a PDF', 'permanent'");
  auto poisoned
      = ingestion(document(tenant),
                  ", status, attempt_count, completed_at, last_error, error_class, claimed_by",
                  ", 'failed', 3, now() - interval '3 hours', 'poison: the claim of w9 expired', "
                  "'poison', 'w9'");
  auto skipped = ingestion(document(tenant), ", status, completed_at, skip_reason, last_error",
                           ", 'skipped', now() - interval '4 hours', 'known_file', "
                           "'known_file: its hash is in the known-file set'");
  auto cancelled = ingestion(
      document(tenant), ", status, completed_at, cancel_requested_at, last_error",
      ", 'cancelled', now() - interval '5 hours', now() - interval '5 hours', 'cancelled'");
  auto large = ingestion(document(other_tenant),
                         ", size_class, class_attempts_base, attempt_count, priority, last_error, "
                         "error_class",
                         ", 'large', 1, 1, 5, 'ocr.deadline: too slow', 'transient'");
  auto cancelling = ingestion(
      document(tenant),
      ", claim_token, lease_expires_at, claimed_by, started_at, cancel_requested_at",
      ", gen_random_uuid(), now() + interval '5 minutes', 'w-live', now() - interval '2 minutes', "
      "now() - interval '10 seconds'");
  auto container = ingestion(document(tenant), ", stage", ", 'unpack'");
  auto lost_claim = ingestion(document(tenant),
                              ", status, attempt_count, completed_at, last_error, error_class",
                              ", 'failed', 1, now(), 'claim lost', 'claim_lost'");
  // A second ingestion of a document, reprocessed after the first failed.
  auto again = ingestion(d1, "", "");
  // Documents in every matching state of migration 014.
  auto m_pending
      = document(tenant, "pending", ", matching_attempts, matching_error, matching_message_seen_at",
                 ", 1, 'llm.http_503: busy', now() - interval '15 minutes'");
  auto m_running = document(
      tenant, "in-progress",
      ", matching_attempts, matching_claim_token, matching_claimed_by, matching_lease_expires_at, "
      "matching_started_at",
      ", 2, gen_random_uuid(), 'm-live', now() + interval '5 minutes', now() - interval '1 "
      "minute'");
  auto m_crashed = document(
      tenant, "in-progress",
      ", matching_attempts, matching_claim_token, matching_claimed_by, matching_lease_expires_at, "
      "matching_started_at",
      ", 1, gen_random_uuid(), 'm-dead', now() - interval '5 minutes', now() - interval '20 "
      "minutes'");
  auto m_succeeded
      = document(tenant, "succeeded", ", matching_attempts, cluster_id, matching_claimed_by",
                 ", 1, $1::uuid, 'm-done'");
  auto m_failed
      = document(tenant, "failed", ", matching_attempts, matching_error, matching_failed_at",
                 ", 3, 'poison: the claim of m1 expired', now() - interval '1 day'");
  auto m_none = document(tenant);
  db->query("INSERT INTO event_sink (name) VALUES ('webhook')");

  // What there is before, to compare with after.
  auto claims_before = rows(std::string{"SELECT "} + claim_columns + " FROM ingestion ORDER BY id");
  auto ingestions_before
      = rows(std::string{"SELECT id::text, (to_jsonb(i) - '"} + moved_ingestion_columns
             + "'::text[])::text FROM ingestion AS i ORDER BY id");
  auto documents_before
      = rows(std::string{"SELECT id::text, (to_jsonb(d) - '"} + moved_document_columns
             + "'::text[])::text FROM document AS d ORDER BY id");
  auto matching_before
      = rows("SELECT id::text, matching_status, matching_error, matching_attempts::text, "
             "matching_failed_at::text, "
             "CASE WHEN matching_claim_token IS NOT NULL THEN matching_started_at END::text "
             "FROM document WHERE matching_status IS NOT NULL ORDER BY id");
  auto match_claims_before
      = rows("SELECT id::text, 'match', id::text, tenant_id::text, "
             "CASE WHEN matching_status = 'in-progress' THEN matching_claim_token END::text, "
             "matching_claimed_by, matching_lease_expires_at::text, matching_started_at::text, "
             "matching_message_seen_at::text, created_at::text "
             "FROM document WHERE matching_status IS NOT NULL ORDER BY id");
  auto outbox_before = db->scalar("SELECT count(*) FROM event_outbox");
  ASSERT_EQ(claims_before.size(), 13u);

  // 015 and the migrations after it (which must carry the rows on as well).
  auto applied = db->migrate_rest();
  ASSERT_FALSE(applied.empty());
  ASSERT_EQ(applied.front(), "015_work_items.sql");
  EXPECT_EQ(db->scalar("SELECT count(*) FROM schema_migrations WHERE version = 15"), "1");

  // Each ingestion's claim, as it was, in its work item (of its document's tenant, no crash
  // counted yet).
  EXPECT_EQ(rows(std::string{"SELECT "} + claim_columns
                 + " FROM work_item WHERE stage <> 'match' ORDER BY id"),
            claims_before);
  EXPECT_EQ(
      db->scalar("SELECT count(*) FROM work_item AS w JOIN document AS d ON d.id = w.document_id "
                 "WHERE w.tenant_id <> d.tenant_id OR w.crash_count <> 0"),
      "0");
  // The ingestion and the document keep everything else, unchanged (migration 018's usage
  // columns, 022's retention marks and 023's batch are added empty).
  EXPECT_EQ(rows("SELECT id::text, (to_jsonb(i) - ARRAY['transcribed_pages', 'transcribed_by', "
                 "'derived_pruned_at', 'audit_pruned_at', 'batch_id'])::text "
                 "FROM ingestion AS i ORDER BY id"),
            ingestions_before);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion WHERE batch_id IS NOT NULL"), "0");
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion WHERE transcribed_pages IS NOT NULL "
                       "OR transcribed_by IS NOT NULL OR derived_pruned_at IS NOT NULL "
                       "OR audit_pruned_at IS NOT NULL"),
            "0");
  EXPECT_EQ(rows("SELECT id::text, (to_jsonb(d) - 'original_pruned_at' - 'features_seq')::text "
                 "FROM document AS d ORDER BY id"),
            documents_before);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM document WHERE original_pruned_at IS NOT NULL "
                       "OR features_seq IS NOT NULL"),
            "0");
  // Each document's matching, as the view shows it, is what its columns said.
  EXPECT_EQ(
      rows("SELECT document_id::text, matching_status, matching_error, matching_attempts::text, "
           "matching_failed_at::text, matching_started_at::text FROM document_matching ORDER BY "
           "document_id"),
      matching_before);
  EXPECT_EQ(
      rows("SELECT id::text, stage, document_id::text, tenant_id::text, claim_token::text, "
           "claimed_by, "
           "lease_expires_at::text, started_at::text, message_seen_at::text, created_at::text "
           "FROM work_item WHERE stage = 'match' ORDER BY id"),
      match_claims_before);
  auto match_item = [&](const std::string& doc) {
    return db->scalar("SELECT status || ' ' || attempt_count FROM work_item WHERE id = $1", {doc});
  };
  EXPECT_EQ(match_item(m_pending), "in-progress 1");
  EXPECT_EQ(match_item(m_running), "in-progress 1");
  EXPECT_EQ(match_item(m_crashed), "in-progress 0");
  EXPECT_EQ(match_item(m_succeeded), "completed 0");
  EXPECT_EQ(match_item(m_failed), "failed 3");
  EXPECT_EQ(db->scalar("SELECT count(*) FROM work_item WHERE id = $1", {m_none}), "0");
  EXPECT_EQ(db->scalar("SELECT count(*) FROM document_matching WHERE document_id = $1", {m_none}),
            "0");
  EXPECT_EQ(db->scalar("SELECT count(*) FROM work_item"), "18");

  // The moved columns are gone, with the triggers and functions that read them.
  EXPECT_EQ(
      db->scalar("SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 AND "
                 "((table_name = 'ingestion' AND column_name = ANY ($2::text[])) OR "
                 "(table_name = 'document' AND column_name = ANY ($3::text[])))",
                 {db->name(), moved_ingestion_columns, moved_document_columns}),
      "0");
  EXPECT_EQ(
      db->scalar("SELECT count(*) FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid "
                 "JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND "
                 "t.tgname IN ('ingestion_changed_event', 'document_matching_event')",
                 {db->name()}),
      "0");
  EXPECT_EQ(
      db->scalar(
          "SELECT count(*) FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace "
          "WHERE n.nspname = $1 AND p.proname IN ('ingestd_ingestion_changed_event', "
          "'ingestd_document_matching_event')",
          {db->name()}),
      "0");
  // What it adds: the outbox's priority, the sinks' types (a sink of before takes every type) and
  // the notifier's name.
  EXPECT_EQ(db->scalar("SELECT name || ' ' || (types IS NULL) FROM event_sink"), "webhook true");
  db->query("INSERT INTO event_sink (name, types) VALUES ('notify', '{INGESTION_FAILED}')");
  EXPECT_EQ(
      db->scalar("SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 AND "
                 "table_name = 'event_outbox' AND column_name = 'priority'",
                 {db->name()}),
      "1");
  // Nothing was emitted by the migration itself.
  EXPECT_EQ(db->scalar("SELECT count(*) FROM event_outbox"), outbox_before);

  // The claims work on the carried-over rows.
  pg_work_repository work{db->url()};
  auto claim = [&](const std::string& id, const std::string& stage = "ingest",
                   const std::string& size_class = "") {
    claim_request r;
    r.item = *uuid::parse(id);
    r.token = uuid::v7();
    r.stage = stage;
    r.size_class = size_class;
    r.max_attempts = 5;
    r.audit = stage != "match";
    auto got
        = await<std::vector<claim_answer>>([&](auto cb) { work.claim({r}, "w-new", 300s, cb); });
    EXPECT_TRUE(got) << got.error().describe();
    return got && got->size() == 1 ? got->front() : claim_answer{};
  };
  auto q = claim(queued, "ingest", "small");
  ASSERT_EQ(q.outcome, claim_outcome::granted) << q.detail;
  EXPECT_EQ(q.work.attempt_count, 1);
  EXPECT_EQ(q.work.priority, 20);
  EXPECT_EQ(q.work.tenant_id.str(), tenant);
  EXPECT_EQ(q.work.document_id.str(), d1);
  EXPECT_EQ(claim(held).outcome, claim_outcome::held);
  auto c = claim(crashed);
  ASSERT_EQ(c.outcome, claim_outcome::granted);
  EXPECT_EQ(c.work.attempt_count, 3);
  EXPECT_EQ(
      db->scalar(
          "SELECT attempt_count || ' ' || crash_count || ' ' || claimed_by || ' ' || last_error "
          "FROM work_item WHERE id = $1",
          {crashed}),
      "3 1 w-new worker.crash: the claim of w-dead expired without an outcome or give-back "
      "(attempt 3 of 5)");
  for (auto& id : {completed, failed, poisoned, skipped, cancelled, lost_claim})
    EXPECT_EQ(claim(id).outcome, claim_outcome::finished) << id;
  EXPECT_EQ(claim(large, "ingest", "small").outcome, claim_outcome::moved);
  auto l = claim(large, "ingest", "large");
  ASSERT_EQ(l.outcome, claim_outcome::granted);
  EXPECT_EQ(l.work.class_attempts_base, 1);
  EXPECT_EQ(l.work.priority, 5);
  EXPECT_EQ(claim(container).outcome, claim_outcome::unknown);
  EXPECT_EQ(claim(container, "unpack").outcome, claim_outcome::granted);
  EXPECT_EQ(claim(again).outcome, claim_outcome::granted);
  auto requested = await<std::vector<uuid>>([&](auto cb) {
    work.cancel_requests({*uuid::parse(cancelling), *uuid::parse(held)}, cb);
  });
  ASSERT_TRUE(requested);
  EXPECT_EQ(*requested, std::vector<uuid>{*uuid::parse(cancelling)});
  EXPECT_EQ(claim(m_pending, "match").outcome, claim_outcome::granted);
  EXPECT_EQ(claim(m_running, "match").outcome, claim_outcome::held);
  auto mc = claim(m_crashed, "match");
  ASSERT_EQ(mc.outcome, claim_outcome::granted);
  EXPECT_EQ(mc.work.attempt_count, 1);
  EXPECT_EQ(db->scalar("SELECT matching_attempts FROM document_matching WHERE document_id = $1",
                       {m_crashed}),
            "2");
  EXPECT_EQ(claim(m_succeeded, "match").outcome, claim_outcome::finished);
  EXPECT_EQ(claim(m_failed, "match").outcome, claim_outcome::finished);
  EXPECT_EQ(claim(m_none, "match").outcome, claim_outcome::unknown);
  // The new trigger follows the carried-over rows: the queued one completes.
  auto done = await<std::vector<result<void>>>(
      [&](auto cb) { work.complete({work_outcome{q.work.ref()}}, cb); });
  ASSERT_TRUE(done && done->at(0))
      << (done ? done->at(0).error().describe() : done.error().describe());
  EXPECT_EQ(
      db->scalar("SELECT status || ' ' || (completed_at IS NOT NULL) FROM ingestion WHERE id = $1",
                 {queued}),
      "completed true");
  EXPECT_EQ(
      db->scalar(
          "SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
          "(body::jsonb)->>'type' = 'INGESTION_COMPLETED' AND (body::jsonb)->>'ingestion_id' = $1",
          {queued}),
      "1");
}

TEST_F(migration_015_test,
       an_empty_database_of_migration_014_migrates_and_a_second_run_does_nothing) {
  auto applied = db->migrate_rest();
  ASSERT_FALSE(applied.empty());
  EXPECT_EQ(applied.front(), "015_work_items.sql");
  EXPECT_TRUE(db->migrate_rest().empty());
  EXPECT_EQ(db->scalar("SELECT count(*) FROM work_item"), "0");
  auto migrations = embedded_migrations();
  auto m015 = std::find_if(migrations.begin(), migrations.end(),
                           [](const migration& m) { return m.name == "015_work_items.sql"; });
  ASSERT_NE(m015, migrations.end());
  EXPECT_EQ(min_node_version(*m015), "0.2.0");
  // A node older than 0.2.0 reads the moved columns: it is refused.
  auto old = check_node_version(db->url(), "0.1.9");
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().code, "node.too_old");
  EXPECT_TRUE(check_node_version(db->url(), "0.2.0"));
}
