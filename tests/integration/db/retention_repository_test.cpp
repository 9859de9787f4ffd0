// pg_retention_repository on a fresh schema (migration 022): what is due is past its days (its
// tenant's own, else the default; 0 keeps it), not in progress, oldest first and at most a batch;
// a marked document or ingestion is not due again; a document submitted again is unmarked and
// counts its age from then.
#include "adapters/db/pg_retention_repository.hpp"
#include "tests/integration/db/work_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::completing;
using ingestd::test::work_test;

namespace {

class retention_test : public work_test {
protected:
  void SetUp() override {
    work_test::SetUp();
    if (!HasFatalFailure())
      retention = std::make_unique<pg_retention_repository>(db->url());
  }
  void TearDown() override {
    retention.reset();
    work_test::TearDown();
  }

  /// A completed ingestion of a new document, its rows and audit trail made `days` old.
  uuid finished(int days) {
    auto id = new_ingestion();
    auto ref = claimed(id);
    transcription_record tr{"t/ingestions/" + id.str() + "/transcription-output.json", "", 0.9, 1,
                            "tesseract"};
    EXPECT_TRUE(await<void>([&](auto cb) { ingest->record_transcription(ref, tr, cb); }));
    EXPECT_TRUE(complete_ingestion(completing(ref)));
    age(id, days);
    return id;
  }

  void age(uuid ingestion, int days) {
    auto ago = std::to_string(days) + " days";
    db->query("UPDATE ingestion SET created_at = now() - $2::interval WHERE id = $1",
              {ingestion.str(), ago});
    db->query("UPDATE document SET created_at = now() - $2::interval WHERE id = $1",
              {document_of(ingestion).str(), ago});
    db->query("UPDATE audit_trail SET written_at = now() - $2::interval, "
              "ats = array_fill(now() - $2::interval, ARRAY[cardinality(ats)]) "
              "WHERE ingestion_id = $1",
              {ingestion.str(), ago});
  }

  std::vector<uuid> due_documents(const retention_days& r, int limit = 10) {
    auto due = retention->due_originals(r, limit);
    EXPECT_TRUE(due) << due.error().describe();
    std::vector<uuid> out;
    for (auto& d : due ? *due : std::vector<due_original>{})
      out.push_back(d.document_id);
    return out;
  }

  std::unique_ptr<pg_retention_repository> retention;
};

} // namespace

TEST_F(retention_test, originals_past_their_days_are_due_oldest_first_unless_work_runs_on_them) {
  auto older = finished(50);
  auto old = finished(40);
  finished(10); // not due
  auto running = new_ingestion();
  age(running, 60);
  const retention_days thirty{30, {}};
  EXPECT_EQ(due_documents(thirty), (std::vector<uuid>{document_of(older), document_of(old)}));
  EXPECT_EQ(due_documents(thirty, 1), (std::vector<uuid>{document_of(older)}));
  // The tenant's own days replace the default: 0 keeps, 45 takes the older one only.
  EXPECT_TRUE(due_documents({30, {{tenant_, 0}}}).empty());
  EXPECT_EQ(due_documents({0, {{tenant_, 45}}}), (std::vector<uuid>{document_of(older)}));
  EXPECT_EQ(due_documents({30, {{uuid::v4(), 0}}}).size(), 2u) << "another tenant's days";

  ASSERT_TRUE(retention->originals_pruned({document_of(older)}));
  EXPECT_EQ(due_documents(thirty), (std::vector<uuid>{document_of(old)}));
  // Submitted again: stored again by intake, unmarked, and its age counts from the new ingestion.
  auto hash
      = db->scalar("SELECT content_hash FROM document WHERE id = $1", {document_of(older).str()});
  ASSERT_TRUE(intake_repo->create_ingestion(intake(hash), 30s));
  EXPECT_EQ(db->scalar("SELECT (original_pruned_at IS NULL)::text FROM document WHERE id = $1",
                       {document_of(older).str()}),
            "true");
  EXPECT_EQ(due_documents(thirty), (std::vector<uuid>{document_of(old)}));
}

TEST_F(retention_test, derived_objects_and_the_audit_trail_of_finished_ingestions_go_once) {
  auto old = finished(40);
  auto fresh = finished(5);
  auto due = retention->due_derived_objects({30, {}}, 10);
  ASSERT_TRUE(due) << due.error().describe();
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].ingestion_id, old);
  EXPECT_EQ((*due)[0].transcription_file_path,
            "t/ingestions/" + old.str() + "/transcription-output.json");
  EXPECT_EQ((*due)[0].preprocessed_file_path, "");
  ASSERT_TRUE(retention->derived_pruned({old}));
  auto again = retention->due_derived_objects({30, {}}, 10);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty());

  const std::string audit = "SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1";
  auto before = count(audit, {old.str()});
  ASSERT_GT(before, 0);
  auto pruned = retention->prune_audit({30, {}}, 10);
  ASSERT_TRUE(pruned) << pruned.error().describe();
  EXPECT_EQ(pruned->first, before);
  EXPECT_EQ(pruned->second, 1);
  EXPECT_EQ(count(audit, {old.str()}), 0);
  EXPECT_GT(count(audit, {fresh.str()}), 0);
  auto nothing = retention->prune_audit({30, {}}, 10);
  ASSERT_TRUE(nothing);
  EXPECT_EQ(nothing->second, 0);
}

TEST_F(retention_test, delivered_events_past_their_tenants_days_go_and_queue_messages_stay) {
  auto mine = document_of(new_ingestion());
  auto other_tenant = uuid::v4();
  auto r = intake(uuid::v4().str(), other_tenant);
  ASSERT_TRUE(intake_repo->create_ingestion(r, 30s));
  // A row written before migration 022 (its tenant in the body only), and a queue message.
  db->query("INSERT INTO event_outbox (destination, body, ordering_key, sent_at) VALUES "
            "('events', $1, 'legacy', now()), ('ingest-q', 'not json', 'queue', now())",
            {R"({"type": "DOCUMENT_ADDED", "tenant_id": ")" + tenant_.str() + R"("})"});
  db->query(
      "UPDATE event_outbox SET sent_at = now() - interval '40 days' WHERE sent_at IS NOT NULL");
  const std::string rows = "SELECT count(*) FROM event_outbox WHERE ordering_key = $1";
  auto before_mine = count(rows, {mine.str()});
  ASSERT_GT(before_mine, 0);
  ASSERT_GT(count(rows, {r.document_id.str()}), 0);

  // The other tenant keeps its events (its own days 0).
  auto pruned = retention->prune_events({30, {{other_tenant, 0}}}, 100);
  ASSERT_TRUE(pruned) << pruned.error().describe();
  EXPECT_EQ(*pruned, before_mine + 1);
  EXPECT_EQ(count(rows, {mine.str()}), 0);
  EXPECT_EQ(count(rows, {"legacy"}), 0);
  EXPECT_GT(count(rows, {r.document_id.str()}), 0);
  EXPECT_EQ(count(rows, {"queue"}), 1);
  // Newer than the days: nothing.
  auto none = retention->prune_events({50, {}}, 100);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, 0);
}
