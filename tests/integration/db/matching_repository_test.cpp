// pg_matching_repository on a fresh schema, with the match stage's work items claimed through
// pg_work_repository: the claim of a document's matching (pending, held, crashes counted, poison at
// max attempts, finished and unqueued documents), give-backs and failures as the view
// document_matching shows them, fencing of every write, the stored features, candidate retrieval by
// each signal and its use of the indexes, the write phase (edges once per pair, rollback on
// failure, cluster merge and split, concurrent writers, the work item completed in its transaction)
// and matches_of.
#include <algorithm>
#include <barrier>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "adapters/db/pg_matching_repository.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;

namespace {

class matching_repository_test : public ingestd::test::postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    if (HasFatalFailure())
      return;
    repo = std::make_unique<pg_matching_repository>(db->url());
    work = std::make_unique<pg_work_repository>(db->url());
  }

  void TearDown() override {
    repo.reset();
    work.reset();
    postgres_test::TearDown();
  }

  /// A document of `tenant` with a completed ingestion named `file_name`, its matching `status`
  /// ("pending": queued, "succeeded", "failed"; empty: never queued).
  uuid add_document(const std::string& status = "pending", uuid tenant = tenant_,
                    const std::string& file_name = "invoice.pdf") {
    auto id = uuid::v7();
    db->query("INSERT INTO document (id, tenant_id, content_hash, file_path, structured_data) "
              "VALUES ($1, $2, $3, $4, '{\"invoice_number\": \"X-1\"}')",
              {id.str(), tenant.str(), uuid::v4().str(), "documents/" + id.str() + ".pdf"});
    db->query("INSERT INTO ingestion (id, document_id, uploaded_by, status, source_metadata, "
              "transcription_file_path, completed_at) VALUES ($1, $2, $3, 'completed', "
              "jsonb_build_object('file_name', $4::text), $5, now())",
              {uuid::v7().str(), id.str(), uuid::v4().str(), file_name,
               "transcriptions/" + id.str() + ".json"});
    if (!status.empty())
      db->query("INSERT INTO work_item (id, stage, document_id, tenant_id, status) "
                "VALUES ($1, 'match', $1, $2, $3)",
                {id.str(), tenant.str(),
                 status == "succeeded" ? "completed"
                 : status == "failed"  ? "failed"
                                       : "in-progress"});
    return id;
  }

  /// Queues the document's matching again, as an ingestion's completion does (or for the first
  /// time).
  void queue_matching(uuid doc) {
    db->query(
        "SELECT ingestd_add_work($1, 'match', $1, tenant_id, 50, 'small', 'match-q', false, true) "
        "FROM document WHERE id = $1",
        {doc.str()});
  }

  claim_answer claim(uuid doc, uuid token, int32_t max_attempts = 3,
                     pg_work_repository* w = nullptr, std::chrono::seconds lease = 300s) {
    auto& target = w != nullptr ? *w : *work;
    claim_request r;
    r.item = doc;
    r.token = token;
    r.stage = "match";
    r.max_attempts = max_attempts;
    auto res
        = await<std::vector<claim_answer>>([&](auto cb) { target.claim({r}, "m1", lease, cb); });
    EXPECT_TRUE(res) << res.error().describe();
    return res && res->size() == 1 ? res->front() : claim_answer{};
  }

  /// Claims the document's matching; fails the test when it cannot.
  claim_ref claimed(uuid doc, pg_work_repository* w = nullptr) {
    auto token = uuid::v4();
    auto c = claim(doc, token, 3, w);
    EXPECT_EQ(c.outcome, claim_outcome::granted)
        << "document " << doc.str() << ": " << to_string(c.outcome);
    return claim_ref{doc, token};
  }

  result<void> store(claim_ref ref, const match_features& f) {
    return await<void>([&](auto cb) { repo->store_features(ref, f, cb); });
  }

  result<void> write(claim_ref ref, std::vector<match_edge> edges,
                     matching_repository* r = nullptr) {
    auto& target = r != nullptr ? *r : *repo;
    return await<void>([&](auto cb) { target.write_matches(work_outcome{ref}, edges, cb); });
  }

  result<failure_outcome> fail(claim_ref ref, error err, int32_t max_attempts = 3) {
    failure_record rec;
    rec.error = std::move(err);
    rec.max_attempts = max_attempts;
    return await<failure_outcome>([&](auto cb) { work->record_failure(ref, rec, 0s, {}, cb); });
  }

  /// Queues and claims the document's matching and writes its edges.
  void match(uuid doc, const std::vector<uuid>& others) {
    queue_matching(doc);
    std::vector<match_edge> edges;
    edges.reserve(others.size());
    for (auto& o : others)
      edges.push_back(match_edge{o, match_kind::same_invoice, 0.9, "test"});
    auto res = write(claimed(doc), edges);
    ASSERT_TRUE(res) << res.error().describe();
  }

  std::vector<match_document> candidates(uuid doc, const match_features& f, int limit = 20,
                                         uuid tenant = tenant_) {
    auto res = await<std::vector<match_document>>(
        [&](auto cb) { repo->candidates(tenant, doc, f, limit, cb); });
    EXPECT_TRUE(res) << res.error().describe();
    return res ? *res : std::vector<match_document>{};
  }

  /// A document whose features are stored and whose matching succeeded.
  uuid with_features(const match_features& f, uuid tenant = tenant_) {
    auto doc = add_document("pending", tenant);
    auto ref = claimed(doc);
    auto res = store(ref, f);
    EXPECT_TRUE(res) << res.error().describe();
    auto done = write(ref, {});
    EXPECT_TRUE(done) << done.error().describe();
    return doc;
  }

  std::string column(uuid doc, const std::string& col) {
    return db->scalar("SELECT " + col + "::text FROM document WHERE id = $1", {doc.str()});
  }

  /// A column of the document's row of the view document_matching ("none" without one; "" NULL).
  std::string matching(uuid doc, const std::string& col = "matching_status") {
    auto rows = db->query("SELECT " + col + "::text FROM document_matching WHERE document_id = $1",
                          {doc.str()});
    return rows.empty() ? "none" : rows[0][0].value_or("");
  }

  std::string item(uuid doc, const std::string& expr) {
    return db->scalar("SELECT (" + expr + ")::text FROM work_item WHERE id = $1", {doc.str()});
  }

  std::string cluster(uuid doc) { return column(doc, "cluster_id"); }

  int64_t edges() { return std::stoll(db->scalar("SELECT count(*) FROM document_match")); }

  void expire(uuid doc) {
    db->query("UPDATE work_item SET lease_expires_at = now() - interval '1 minute' WHERE id = $1",
              {doc.str()});
  }

  static std::string smallest(const std::vector<uuid>& ids) {
    std::vector<std::string> s;
    s.reserve(ids.size());
    for (auto& id : ids)
      s.push_back(id.str());
    return *std::min_element(s.begin(), s.end());
  }

  std::unique_ptr<pg_matching_repository> repo;
  std::unique_ptr<pg_work_repository> work;
  static inline const uuid tenant_ = uuid::v4();
};

match_features features(std::string number, std::string counterparty, double total,
                        std::string date) {
  match_features f;
  f.kind = "invoice";
  f.number = std::move(number);
  f.counterparty = counterparty;
  f.normalized_counterparty = std::move(counterparty);
  f.total = total;
  f.currency = "EUR";
  f.date = std::move(date);
  f.searchable_text = "invoice " + f.number;
  f.text_hash = "hash-" + f.number;
  return f;
}

bool contains(const std::vector<match_document>& docs, uuid id) {
  return std::any_of(docs.begin(), docs.end(), [&](auto& d) { return d.id == id; });
}

// -- the claim -------------------------------------------------------------------------------

TEST_F(matching_repository_test, claims_a_pending_document_and_loads_what_the_match_job_reads) {
  auto doc = add_document("pending", tenant_, "scan-001.pdf");
  EXPECT_EQ(matching(doc), "pending");
  EXPECT_EQ(matching(doc, "matching_attempts"), "0");
  auto token = uuid::v4();
  auto c = claim(doc, token);
  ASSERT_EQ(c.outcome, claim_outcome::granted);
  EXPECT_EQ(c.work.item, doc);
  EXPECT_EQ(c.work.document_id, doc);
  EXPECT_EQ(c.work.token, token);
  EXPECT_EQ(c.work.tenant_id, tenant_);
  EXPECT_EQ(c.work.attempt_count, 0);
  EXPECT_EQ(matching(doc), "in-progress");
  EXPECT_EQ(matching(doc, "matching_attempts"), "1");
  EXPECT_NE(matching(doc, "matching_started_at"), "");
  EXPECT_EQ(item(doc, "claimed_by"), "m1");
  auto subject = await<matching_subject>([&](auto cb) { repo->load(doc, cb); });
  ASSERT_TRUE(subject) << subject.error().describe();
  EXPECT_EQ(subject->file_name, "scan-001.pdf");
  EXPECT_EQ(subject->transcription_file_path, "transcriptions/" + doc.str() + ".json");
  EXPECT_NE(subject->structured_data.find("X-1"), std::string::npos);
  auto unknown = await<matching_subject>([&](auto cb) { repo->load(uuid::v7(), cb); });
  ASSERT_FALSE(unknown);
  EXPECT_TRUE(unknown.error().permanent());
  EXPECT_EQ(unknown.error().code, "match.unknown");
}

TEST_F(matching_repository_test, a_held_document_is_not_claimed_again) {
  auto doc = add_document();
  ASSERT_EQ(claim(doc, uuid::v4()).outcome, claim_outcome::granted);
  EXPECT_EQ(claim(doc, uuid::v4()).outcome, claim_outcome::held);
  EXPECT_EQ(matching(doc, "matching_attempts"), "1");
}

TEST_F(matching_repository_test, an_expired_claim_is_a_crash_and_counts) {
  auto doc = add_document();
  ASSERT_EQ(claim(doc, uuid::v4()).outcome, claim_outcome::granted);
  expire(doc);
  auto c = claim(doc, uuid::v4());
  ASSERT_EQ(c.outcome, claim_outcome::granted);
  EXPECT_EQ(c.work.attempt_count, 1);
  EXPECT_EQ(matching(doc, "matching_attempts"), "2");
  EXPECT_EQ(matching(doc, "matching_error").rfind("worker.crash: ", 0), 0u)
      << matching(doc, "matching_error");
  // The match stage keeps no audit trail.
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion_event"), "0");
}

// Crashes count as for ingestions: the crash that reaches max_attempts fails it as poison.
TEST_F(matching_repository_test, the_crash_reaching_max_attempts_fails_as_poison) {
  auto doc = add_document();
  for (int crash = 0; crash < 3; ++crash) {
    ASSERT_EQ(claim(doc, uuid::v4(), 3).outcome, claim_outcome::granted) << crash;
    expire(doc);
  }
  auto poisoned = claim(doc, uuid::v4(), 3);
  EXPECT_EQ(poisoned.outcome, claim_outcome::finished);
  EXPECT_EQ(poisoned.detail.rfind("poison: ", 0), 0u) << poisoned.detail;
  EXPECT_EQ(matching(doc), "failed");
  EXPECT_EQ(matching(doc, "matching_attempts"), "3");
  EXPECT_EQ(matching(doc, "matching_error").rfind("poison: ", 0), 0u);
  EXPECT_NE(matching(doc, "matching_failed_at"), "");
  EXPECT_EQ(matching(doc, "matching_started_at"), "");
  EXPECT_EQ(item(doc, "claim_token IS NULL AND error_class = 'poison'"), "true");
}

TEST_F(matching_repository_test, finished_unqueued_and_unknown_documents_are_not_claimed) {
  auto succeeded = add_document("succeeded");
  auto failed = add_document("failed");
  auto unqueued = add_document("");
  auto unknown = uuid::v7();
  auto s = claim(succeeded, uuid::v4());
  EXPECT_EQ(s.outcome, claim_outcome::finished);
  EXPECT_EQ(s.detail, "completed");
  auto f = claim(failed, uuid::v4());
  EXPECT_EQ(f.outcome, claim_outcome::finished);
  EXPECT_EQ(f.detail, "failed");
  EXPECT_EQ(claim(unqueued, uuid::v4()).outcome, claim_outcome::unknown);
  EXPECT_EQ(claim(unknown, uuid::v4()).outcome, claim_outcome::unknown);
  EXPECT_EQ(matching(succeeded), "succeeded");
  EXPECT_EQ(matching(failed), "failed");
  EXPECT_EQ(matching(unqueued), "none");
  EXPECT_EQ(claim(add_document("pending"), uuid::v4()).outcome, claim_outcome::granted);
}

TEST_F(matching_repository_test, release_gives_back_without_counting) {
  auto doc = add_document();
  auto ref = claimed(doc);
  auto res = await<void>([&](auto cb) { work->release(ref, std::chrono::seconds{0}, {}, cb); });
  ASSERT_TRUE(res) << res.error().describe();
  EXPECT_EQ(matching(doc), "pending");
  EXPECT_EQ(matching(doc, "matching_attempts"), "0");
  EXPECT_EQ(item(doc, "claim_token IS NULL"), "true");
  auto c = claim(doc, uuid::v4());
  ASSERT_EQ(c.outcome, claim_outcome::granted);
  EXPECT_EQ(c.work.attempt_count, 0);
  EXPECT_EQ(matching(doc, "matching_error"), "") << "a give-back is no crash";
}

TEST_F(matching_repository_test, record_failure_transient_permanent_and_at_max) {
  auto transient = add_document();
  auto ref = claimed(transient);
  auto out = fail(ref, error::make_transient("http_503", "busy"));
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_FALSE(out->failed);
  EXPECT_EQ(out->attempt_count, 1);
  EXPECT_EQ(matching(transient), "pending");
  EXPECT_EQ(matching(transient, "matching_error"), "http_503: busy");
  EXPECT_EQ(matching(transient, "matching_attempts"), "1");
  EXPECT_EQ(matching(transient, "matching_failed_at"), "");
  EXPECT_EQ(item(transient, "claim_token IS NULL"), "true");

  auto permanent = add_document();
  ref = claimed(permanent);
  out = fail(ref, error::make_permanent("http_401", "key"));
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_TRUE(out->failed);
  EXPECT_EQ(matching(permanent), "failed");
  EXPECT_NE(matching(permanent, "matching_failed_at"), "");

  // The third delivery's transient failure is the last (max 3).
  auto at_max = add_document();
  for (int delivery = 1; delivery <= 3; ++delivery) {
    ref = claimed(at_max);
    EXPECT_EQ(matching(at_max, "matching_attempts"), std::to_string(delivery));
    out = fail(ref, error::make_transient("timeout", "t"));
    ASSERT_TRUE(out) << out.error().describe();
    EXPECT_EQ(out->attempt_count, delivery);
    EXPECT_EQ(out->failed, delivery == 3);
  }
  EXPECT_EQ(matching(at_max), "failed");
  EXPECT_EQ(matching(at_max, "matching_attempts"), "3");
  EXPECT_EQ(claim(at_max, uuid::v4()).outcome, claim_outcome::finished);
}

TEST_F(matching_repository_test, a_lost_claim_fences_every_write_out) {
  auto other = add_document();
  auto doc = add_document();
  auto old = claimed(doc);
  expire(doc);
  auto now = claimed(doc);
  auto f = features("INV-1", "acme", 10, "2024-01-01");
  auto stored = store(old, f);
  ASSERT_FALSE(stored);
  EXPECT_TRUE(stored.error().claim_lost());
  EXPECT_EQ(column(doc, "features_at"), "");
  auto written = write(old, {match_edge{other, match_kind::related, 0.5, "r"}});
  ASSERT_FALSE(written);
  EXPECT_TRUE(written.error().claim_lost());
  EXPECT_EQ(edges(), 0);
  EXPECT_EQ(cluster(doc), "");
  auto failed = fail(old, error::make_permanent("x", "y"));
  ASSERT_FALSE(failed);
  EXPECT_TRUE(failed.error().claim_lost());
  auto released
      = await<void>([&](auto cb) { work->release(old, std::chrono::seconds{0}, {}, cb); });
  ASSERT_FALSE(released);
  EXPECT_TRUE(released.error().claim_lost());
  auto lost = await<std::vector<claim_ref>>([&](auto cb) {
    work->renew_leases({old, now}, 300s, cb);
  });
  ASSERT_TRUE(lost) << lost.error().describe();
  ASSERT_EQ(lost->size(), 1u);
  EXPECT_EQ(lost->front().token, old.token);
  EXPECT_EQ(matching(doc), "in-progress");
  // The live claim still writes.
  ASSERT_TRUE(store(now, f));
  ASSERT_TRUE(write(now, {}));
  EXPECT_EQ(matching(doc), "succeeded");
}

TEST_F(matching_repository_test, the_write_phase_completes_the_work_item_in_its_transaction) {
  auto a = add_document();
  auto b = add_document();
  auto ref = claimed(a);
  ASSERT_TRUE(write(ref, {match_edge{b, match_kind::same_invoice, 0.9, "t"}}));
  EXPECT_EQ(
      item(a,
           "status || ' ' || (claim_token IS NULL) || ' ' || (lease_expires_at IS NULL) || ' ' || "
           "(completed_at IS NOT NULL)"),
      "completed true true true");
  EXPECT_EQ(matching(a), "succeeded");
  EXPECT_EQ(matching(a, "matching_attempts"), "1");
  // Its event carries the cluster the write made.
  EXPECT_EQ(
      db->scalar(
          "SELECT (body::jsonb)->'payload'->>'cluster_id' FROM event_outbox WHERE destination = "
          "'events' AND (body::jsonb)->>'type' = 'MATCHING_COMPLETED' AND "
          "(body::jsonb)->>'document_id' = $1",
          {a.str()}),
      smallest({a, b}));
  // The same claim cannot write twice.
  auto again = write(ref, {});
  ASSERT_FALSE(again);
  EXPECT_TRUE(again.error().claim_lost());
  EXPECT_EQ(edges(), 1);
  // A write that fails leaves the item in progress under its claim, with nothing of the write.
  auto c = add_document();
  auto rc = claimed(c);
  db->query("ALTER TABLE work_item ADD CONSTRAINT test_no_completion CHECK (status <> 'completed' "
            "OR stage <> 'match' "
            "OR id <> '"
            + c.str() + "')");
  auto refused = write(rc, {match_edge{b, match_kind::related, 0.5, "r"}});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "pg.23514") << refused.error().describe();
  EXPECT_EQ(item(c, "status || ' ' || claim_token"), "in-progress " + rc.token.str());
  EXPECT_EQ(edges(), 1);
  EXPECT_EQ(cluster(c), "");
  EXPECT_EQ(cluster(b), smallest({a, b}));
}

// -- features and candidates -----------------------------------------------------------------

TEST_F(matching_repository_test, stores_features_and_refuses_nothing_for_bad_dates) {
  auto doc = add_document();
  auto ref = claimed(doc);
  auto f = features("INV2024001", "acme trading", 1234.5, "2024-03-15");
  f.references = {"PO77", "PO77", "ORD9"};
  ASSERT_TRUE(store(ref, f));
  EXPECT_EQ(column(doc, "match_number"), "INV2024001");
  EXPECT_EQ(column(doc, "normalized_counterparty"), "acme trading");
  EXPECT_EQ(column(doc, "normalized_references"), "{PO77,ORD9}");
  EXPECT_EQ(column(doc, "match_total"), "1234.500000");
  EXPECT_EQ(column(doc, "match_date"), "2024-03-15");
  EXPECT_EQ(column(doc, "match_kind"), "invoice");
  EXPECT_EQ(column(doc, "text_hash"), "hash-INV2024001");
  EXPECT_NE(column(doc, "features_at"), "");
  f.date = "2024-02-30";
  f.total = std::nullopt;
  ASSERT_TRUE(store(ref, f)) << "redoing the pre-processing is safe";
  EXPECT_EQ(column(doc, "match_date"), "");
  EXPECT_EQ(column(doc, "match_total"), "");
}

TEST_F(matching_repository_test, candidates_by_each_signal_within_the_tenant) {
  auto self_f = features("INV100", "acme trading", 500, "2024-06-01");
  self_f.references = {"PO55"};
  auto same_hash = with_features([&] {
    auto f = features("ZZZ1", "nobody", 1, "2020-01-01");
    f.text_hash = self_f.text_hash;
    return f;
  }());
  auto same_number = with_features([] {
    auto f = features("INV100", "someone else", 2, "2019-01-01");
    f.text_hash = "another content";
    return f;
  }());
  auto credit = with_features([] {
    auto f = features("CN7", "other", 3, "2018-01-01");
    f.kind = "credit_note";
    f.references = {"INV100"};
    return f;
  }());
  auto order = with_features(features("PO55", "x corp", 4, "2017-01-01"));
  auto shares_ref = with_features([] {
    auto f = features("INV999", "y corp", 5, "2016-01-01");
    f.references = {"PO55"};
    return f;
  }());
  auto similar = with_features(features("A1", "acme tradin", 6, "2015-01-01"));
  auto amount_date = with_features(features("B2", "qqq", 502, "2024-08-01"));
  auto unrelated = with_features(features("C3", "zzz", 9000, "2010-01-01"));
  auto too_far = with_features(features("D4", "www", 500, "2023-01-01"));
  auto foreign = with_features(features("INV100", "acme trading", 500, "2024-06-01"), uuid::v4());
  auto no_features = add_document("pending");
  auto self = add_document("pending");
  auto self_ref = claimed(self);
  ASSERT_TRUE(store(self_ref, self_f));

  auto found = candidates(self, self_f);
  for (auto [id, what] :
       std::vector<std::pair<uuid, const char*>>{{same_hash, "text hash"},
                                                 {same_number, "equal number"},
                                                 {credit, "number in its references"},
                                                 {order, "its number in my references"},
                                                 {shares_ref, "references overlap"},
                                                 {similar, "counterparty trigrams"},
                                                 {amount_date, "total and date"}})
    EXPECT_TRUE(contains(found, id)) << what;
  for (auto id : {unrelated, too_far, foreign, no_features, self})
    EXPECT_FALSE(contains(found, id)) << id.str();
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.front().id, same_hash) << "the same content first";
  auto c = std::find_if(found.begin(), found.end(), [&](auto& d) { return d.id == credit; });
  ASSERT_NE(c, found.end());
  EXPECT_EQ(c->features.kind, "credit_note");
  EXPECT_EQ(c->features.references, std::vector<std::string>{"INV100"});
  EXPECT_EQ(c->features.date, "2018-01-01");
  ASSERT_TRUE(c->features.total.has_value());
  EXPECT_DOUBLE_EQ(*c->features.total, 3);
  EXPECT_EQ(c->tenant_id, tenant_);
  EXPECT_EQ(c->file_name, "invoice.pdf");
  EXPECT_NE(c->structured_data.find("X-1"), std::string::npos);

  EXPECT_EQ(candidates(self, self_f, 2).size(), 2u);
  EXPECT_TRUE(candidates(self, self_f, 0).empty());
  // Another tenant sees only its own.
  auto theirs = candidates(self, self_f, 20, uuid::v4());
  EXPECT_TRUE(theirs.empty());
}

TEST_F(matching_repository_test, candidate_retrieval_uses_the_indexes) {
  auto loaded = load_synthetic_match_documents(db->url(), tenant_, 10000);
  ASSERT_TRUE(loaded) << loaded.error().describe();
  EXPECT_EQ(*loaded, 10000);
  auto probe = db->query("SELECT id::text, match_number, normalized_counterparty, "
                         "match_total::text, match_date::text, text_hash FROM document "
                         "WHERE tenant_id = $1 AND match_kind = 'credit_note' LIMIT 1",
                         {tenant_.str()});
  ASSERT_EQ(probe.size(), 1u);
  auto& p = probe.front();
  auto plan_rows = db->query(
      std::string{"EXPLAIN "} + pg_matching_repository::candidates_sql(),
      {tenant_.str(), *p[0], *p[1], "{INV100040,PO12}", *p[2], *p[3], *p[4], *p[5], "20"});
  std::string plan;
  for (auto& r : plan_rows)
    plan += r[0].value_or("") + "\n";
  for (auto index :
       {"document_match_text_hash_idx", "document_match_number_idx",
        "document_match_references_idx", "document_match_trgm_idx", "document_match_total_idx"})
    EXPECT_NE(plan.find(index), std::string::npos) << index << " not used:\n" << plan;
  EXPECT_EQ(plan.find("Seq Scan on document"), std::string::npos) << plan;

  // And through the repository, the credit note finds the invoice it refers to.
  match_features f;
  f.number = *p[1];
  f.references = {"INV" + std::to_string(std::stoll(p[1]->substr(2)) - 7)};
  auto found = candidates(uuid::parse(*p[0]).value_or(uuid{}), f);
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.front().features.number, f.references.front());
}

// -- the write phase -------------------------------------------------------------------------

TEST_F(matching_repository_test, an_edge_is_stored_once_per_pair) {
  auto a = add_document();
  auto b = add_document();
  match(a, {b});
  match(b, {a});
  EXPECT_EQ(edges(), 1);
  auto row = db->query("SELECT document_a_id::text, document_b_id::text, kind, confidence, "
                       "reason FROM document_match");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(*row[0][0], smallest({a, b}));
  EXPECT_EQ(*row[0][2], "same_invoice");
  EXPECT_EQ(cluster(a), smallest({a, b}));
  EXPECT_EQ(cluster(b), smallest({a, b}));
  EXPECT_EQ(matching(a), "succeeded");
  EXPECT_EQ(item(b, "claim_token IS NULL"), "true");
  // Twice the same other document in one decision: once, the highest confidence.
  auto c = add_document();
  auto ref = claimed(c);
  ASSERT_TRUE(write(ref, {match_edge{a, match_kind::related, 0.4, "weak"},
                          match_edge{a, match_kind::duplicate, 0.99, "strong"}}));
  EXPECT_EQ(db->scalar("SELECT kind FROM document_match WHERE $1 IN (document_a_id, document_b_id)",
                       {c.str()}),
            "duplicate");
}

TEST_F(matching_repository_test, a_failure_between_delete_and_insert_keeps_the_old_edges) {
  auto a = add_document();
  auto b = add_document();
  match(a, {b});
  ASSERT_EQ(edges(), 1);
  queue_matching(a);
  auto ref = claimed(a);
  auto missing = uuid::v7();
  auto res = write(ref, {match_edge{missing, match_kind::related, 0.5, "nowhere"}});
  ASSERT_FALSE(res);
  EXPECT_TRUE(res.error().permanent()) << res.error().describe();
  EXPECT_EQ(res.error().code, "pg.23503") << res.error().describe();
  EXPECT_EQ(edges(), 1);
  EXPECT_EQ(cluster(a), smallest({a, b}));
  EXPECT_EQ(cluster(b), smallest({a, b}));
  EXPECT_EQ(matching(a), "in-progress") << "the claim is still ours";
  EXPECT_EQ(item(a, "claim_token"), ref.token.str());
  // The same claim can still end it.
  ASSERT_TRUE(write(ref, {}));
  EXPECT_EQ(edges(), 0);
}

TEST_F(matching_repository_test, bad_edges_are_refused_before_anything_changes) {
  auto a = add_document();
  auto b = add_document();
  auto foreign = add_document("pending", uuid::v4());
  match(a, {b});
  queue_matching(a);
  auto ref = claimed(a);
  for (auto& e : std::vector<match_edge>{{a, match_kind::duplicate, 1, "self"},
                                         {b, match_kind::duplicate, 1.5, "too sure"},
                                         {b, "", 0.5, "no kind"},
                                         {foreign, match_kind::duplicate, 1, "other tenant"}}) {
    auto res = write(ref, {e});
    ASSERT_FALSE(res) << e.reason;
    EXPECT_TRUE(res.error().permanent()) << e.reason << ": " << res.error().describe();
    EXPECT_EQ(edges(), 1) << e.reason;
  }
}

TEST_F(matching_repository_test, joining_two_clusters_merges_them) {
  auto a = add_document();
  auto b = add_document();
  auto c = add_document();
  auto d = add_document();
  match(a, {b});
  match(c, {d});
  ASSERT_NE(cluster(a), cluster(c));
  auto e = add_document();
  match(e, {b, d});
  auto all = smallest({a, b, c, d, e});
  for (auto doc : {a, b, c, d, e})
    EXPECT_EQ(cluster(doc), all);
}

TEST_F(matching_repository_test, a_disappearing_edge_splits_the_cluster) {
  auto a = add_document();
  auto b = add_document();
  auto c = add_document();
  match(a, {b});
  match(c, {b});
  for (auto doc : {a, b, c})
    ASSERT_EQ(cluster(doc), smallest({a, b, c}));
  // b matched again: it still belongs with a, no longer with c.
  match(b, {a});
  EXPECT_EQ(cluster(a), smallest({a, b}));
  EXPECT_EQ(cluster(b), smallest({a, b}));
  EXPECT_EQ(cluster(c), c.str());
  // and then with nothing: everyone alone.
  match(b, {});
  for (auto doc : {a, b, c})
    EXPECT_EQ(cluster(doc), doc.str());
}

TEST_F(matching_repository_test, a_lone_document_is_its_own_cluster) {
  auto a = add_document();
  match(a, {});
  EXPECT_EQ(cluster(a), a.str());
  EXPECT_EQ(matching(a), "succeeded");
}

// Two documents of one cluster matched at the same moment on two connections (two repositories,
// as two nodes): afterwards every cluster is exactly the connected component of the edges.
TEST_F(matching_repository_test, concurrent_writes_in_one_cluster_keep_clusters_consistent) {
  pg_matching_repository second{db->url()};
  pg_work_repository second_work{db->url()};
  std::vector<uuid> docs;
  docs.reserve(8);
  for (int i = 0; i < 8; ++i)
    docs.push_back(add_document());
  // One chain 0-1-...-7.
  for (int i = 1; i < 8; ++i)
    match(docs[static_cast<size_t>(i)], {docs[static_cast<size_t>(i - 1)]});
  for (auto& d : docs)
    ASSERT_EQ(cluster(d), smallest(docs));

  auto consistent = [&] {
    std::map<std::string, std::string> parent;
    std::function<std::string(const std::string&)> find = [&](const std::string& x) {
      auto it = parent.find(x);
      if (it == parent.end() || it->second == x)
        return x;
      return it->second = find(it->second);
    };
    for (auto& d : docs)
      parent[d.str()] = d.str();
    for (auto& r :
         db->query("SELECT document_a_id::text, document_b_id::text FROM document_match")) {
      auto x = find(*r[0]);
      auto y = find(*r[1]);
      if (x != y)
        parent[std::max(x, y)] = std::min(x, y);
    }
    for (auto& d : docs) {
      std::string root = find(d.str());
      // The smallest member of the component is its root (unions keep the smaller).
      EXPECT_EQ(cluster(d), root) << "document " << d.str();
    }
  };

  for (int round = 0; round < 30; ++round) {
    // Two documents of the same cluster, each with a fresh decision.
    auto i = static_cast<size_t>((round * 3) % 8);
    auto j = static_cast<size_t>((round * 5 + 1) % 8);
    if (i == j)
      j = (j + 1) % 8;
    for (auto k : {i, j})
      queue_matching(docs[k]);
    auto ri = claimed(docs[i]);
    auto rj = claimed(docs[j], &second_work);
    std::vector<match_edge> ei, ej;
    if (round % 2 == 0)
      ej.push_back({docs[(j + 3) % 8], match_kind::related, 0.6, "r"});
    else
      ei.push_back({docs[(i + 1) % 8], match_kind::related, 0.6, "r"});
    std::barrier start{2};
    result<void> a_res, b_res;
    std::thread ta{[&] {
      start.arrive_and_wait();
      a_res = write(ri, ei, repo.get());
    }};
    std::thread tb{[&] {
      start.arrive_and_wait();
      b_res = write(rj, ej, &second);
    }};
    ta.join();
    tb.join();
    ASSERT_TRUE(a_res) << a_res.error().describe();
    ASSERT_TRUE(b_res) << b_res.error().describe();
    consistent();
    if (HasFailure())
      break;
  }
}

// Two documents of one invoice matched at the same time: a stores its features and retrieves
// its candidates before b's features are stored, so a finds nothing; b finds a and writes the
// edge first. a's write phase, which never saw b, keeps b's edge: b's features came later, the
// pair is b's to decide. Matched again (its features stored anew, now the later), a decides.
TEST_F(matching_repository_test, of_two_documents_matched_at_once_the_later_ones_edge_stands) {
  auto a = add_document();
  auto b = add_document();
  queue_matching(a);
  queue_matching(b);
  auto ra = claimed(a);
  auto rb = claimed(b);
  auto fa = features("2024-4471", "schneider elektrotechnik", 2657.33, "2024-01-22");
  auto fb = fa;
  fb.text_hash = "hash-of-the-scan";
  ASSERT_TRUE(store(ra, fa));
  EXPECT_FALSE(contains(candidates(a, fa), b));
  ASSERT_TRUE(store(rb, fb));
  ASSERT_TRUE(contains(candidates(b, fb), a));
  ASSERT_TRUE(write(rb, {match_edge{a, match_kind::same_invoice, 0.95, "number and total"}}));
  ASSERT_TRUE(write(ra, {}));
  EXPECT_EQ(edges(), 1);
  EXPECT_EQ(cluster(a), smallest({a, b}));
  EXPECT_EQ(cluster(b), smallest({a, b}));
  // Both wrote the edge: stored once, the later one's (b's) as it is.
  queue_matching(a);
  queue_matching(b);
  ra = claimed(a);
  rb = claimed(b);
  ASSERT_TRUE(store(ra, fa));
  ASSERT_TRUE(store(rb, fb));
  ASSERT_TRUE(write(rb, {match_edge{a, match_kind::same_invoice, 0.95, "b's"}}));
  ASSERT_TRUE(write(ra, {match_edge{b, match_kind::same_invoice, 0.9, "a's"}}));
  EXPECT_EQ(edges(), 1);
  EXPECT_EQ(db->scalar("SELECT reason FROM document_match"), "b's");
  // a again, alone and now the later: its decision (no edge) ends the pair.
  queue_matching(a);
  ra = claimed(a);
  ASSERT_TRUE(store(ra, fa));
  ASSERT_TRUE(write(ra, {}));
  EXPECT_EQ(edges(), 0);
  EXPECT_EQ(cluster(a), a.str());
  EXPECT_EQ(cluster(b), b.str());
}

TEST_F(matching_repository_test, matches_of_lists_edges_and_the_cluster) {
  auto a = add_document();
  auto b = add_document();
  auto c = add_document();
  auto lone = add_document();
  match(a, {b});
  match(c, {a});
  auto res = await<std::pair<std::vector<stored_match>, std::vector<uuid>>>(
      [&](auto cb) { repo->matches_of(a, cb); });
  ASSERT_TRUE(res) << res.error().describe();
  auto& [found_edges, members] = *res;
  EXPECT_EQ(found_edges.size(), 2u);
  for (auto& e : found_edges) {
    EXPECT_TRUE(e.document_a == a || e.document_b == a);
    EXPECT_LT(e.document_a.str(), e.document_b.str());
    EXPECT_EQ(e.kind, "same_invoice");
    EXPECT_DOUBLE_EQ(e.confidence, 0.9);
    EXPECT_EQ(e.reason, "test");
  }
  std::vector<uuid> expected{a, b, c};
  std::sort(expected.begin(), expected.end(), [](auto& x, auto& y) { return x.str() < y.str(); });
  EXPECT_EQ(members, expected);

  auto alone = await<std::pair<std::vector<stored_match>, std::vector<uuid>>>(
      [&](auto cb) { repo->matches_of(lone, cb); });
  ASSERT_TRUE(alone);
  EXPECT_TRUE(alone->first.empty());
  EXPECT_EQ(alone->second, std::vector<uuid>{lone});
  auto unknown = await<std::pair<std::vector<stored_match>, std::vector<uuid>>>(
      [&](auto cb) { repo->matches_of(uuid::v7(), cb); });
  ASSERT_TRUE(unknown);
  EXPECT_TRUE(unknown->first.empty());
  EXPECT_TRUE(unknown->second.empty());
}

} // namespace
