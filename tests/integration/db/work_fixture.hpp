// The fixture of the claimed-work tests (work_repository_test.cpp, work_revive_test.cpp,
// work_coalescing_test.cpp, ingest_repository_test.cpp and the others of integration_db): a fresh
// schema, the work repository, the ingest repository and the intake repository over it, and
// helpers that make, claim and age work items.
#pragma once

#include <algorithm>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_ingest_repository.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

namespace ingestd::test {

using namespace std::chrono_literals;

/// The ingest stage's queues of these tests.
inline const std::string ingest_queue = "ingest-q";
inline const std::string large_queue = "ingest-large-q";
inline const std::string match_queue = "match-q";
inline const std::string unpack_queue = "unpack-q";
/// Text that is not valid UTF-8 (the first two of the three bytes of U+20AC), and the replacement
/// character that cleaning puts in its place.
inline const std::string cut_euro = "\xE2\x82";
inline const std::string fffd = "\xEF\xBF\xBD";

/// A claim request of the ingest stage (no size classes unless `size_class` is given).
inline claim_request ingest_request(uuid item, uuid token = uuid::v7(), int32_t max_attempts = 3,
                                    std::string size_class = {}) {
  claim_request r;
  r.item = item;
  r.token = token;
  r.stage = "ingest";
  r.size_class = std::move(size_class);
  r.max_attempts = max_attempts;
  r.audit = true;
  return r;
}

/// A failed attempt of `err`.
inline failure_record failure(error err, int32_t max_attempts = 3,
                              std::optional<work_move> move = std::nullopt) {
  failure_record r;
  r.error = std::move(err);
  r.max_attempts = max_attempts;
  r.move = std::move(move);
  return r;
}

/// One audit row of `item`.
inline audit_event audit_row(uuid item, std::string step, std::string outcome = "ok",
                             std::string detail = {}, std::string worker = "w1") {
  return audit_event{
      item, std::move(step), std::move(outcome), std::move(detail), 7, std::move(worker), 0};
}

/// An ingestion's outcome as the ingest stage stores it: its result, its work item's
/// completion with the audit trail, and the document's matching next (when `match` is given).
inline ingest_completion completing(claim_ref ref,
                                    std::string data = R"({"invoice_number": "A-1"})",
                                    std::optional<std::pair<uuid, uuid>> match = std::nullopt) {
  ingest_completion c;
  c.work.ref = ref;
  c.work.audit = {audit_row(ref.item, "complete")};
  if (match)
    c.work.next.push_back(next_work{match->first, "match", match->first, match->second, 50, "small",
                                    match_queue, true});
  c.record.structured_data = std::move(data);
  c.record.valid_structured_data = true;
  c.record.input_tokens = 1200;
  c.record.output_tokens = 300;
  c.record.model = "local-rules";
  return c;
}

/// Answers of asynchronous calls made from the test thread, collected by key. The callbacks share
/// the state, so that an answer arriving after a failed test has returned lands safely.
template <class T>
class answers {
public:
  callback<T> slot(const std::string& key) {
    return [s = state_, key](result<T> r) {
      std::lock_guard g{s->mtx};
      s->got.emplace(key, std::move(r));
      s->cv.notify_all();
    };
  }
  bool wait_for(size_t n, std::chrono::seconds deadline = 30s) {
    std::unique_lock g{state_->mtx};
    return state_->cv.wait_for(g, deadline, [&] { return state_->got.size() >= n; });
  }
  size_t size() {
    std::lock_guard g{state_->mtx};
    return state_->got.size();
  }
  result<T> at(const std::string& key) {
    std::lock_guard g{state_->mtx};
    return state_->got.at(key);
  }

private:
  struct state {
    std::mutex mtx;
    std::condition_variable cv;
    std::map<std::string, result<T>> got;
  };
  std::shared_ptr<state> state_ = std::make_shared<state>();
};

class work_test : public postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    if (HasFatalFailure())
      return;
    work = std::make_unique<pg_work_repository>(db->url());
    ingest = std::make_unique<pg_ingest_repository>(db->url());
    intake_repo = std::make_unique<pg_intake_repository>(db->url());
  }

  void TearDown() override {
    work.reset();
    ingest.reset();
    intake_repo.reset();
    postgres_test::TearDown();
  }

  intake_request intake(const std::string& content_hash, uuid tenant = tenant_) {
    intake_request r;
    r.document_id = uuid::v7();
    r.ingestion_id = uuid::v7();
    r.tenant_id = tenant;
    r.content_hash = content_hash;
    r.file_path = "documents/" + r.document_id.str() + ".pdf";
    r.mime_type = "application/pdf";
    r.uploaded_by = uuid::v4();
    r.source_metadata = R"({"channel": "test"})";
    r.stage = "ingest";
    r.queue = ingest_queue;
    return r;
  }

  /// A new in-progress ingestion of a new document, with its work item and message.
  uuid new_ingestion(const std::string& size_class = "small", const std::string& stage = "ingest") {
    auto r = intake(uuid::v4().str());
    r.size_class = size_class;
    r.stage = stage;
    r.queue = stage == "unpack" ? unpack_queue : size_class == "large" ? large_queue : ingest_queue;
    auto res = intake_repo->create_ingestion(r, 30s);
    EXPECT_TRUE(res) << res.error().describe();
    return r.ingestion_id;
  }

  /// The document of an ingestion.
  uuid document_of(uuid ingestion) {
    return *uuid::parse(
        db->scalar("SELECT document_id FROM ingestion WHERE id = $1", {ingestion.str()}));
  }
  uuid tenant_of(uuid item) {
    return *uuid::parse(db->scalar("SELECT tenant_id FROM work_item WHERE id = $1", {item.str()}));
  }

  /// The answers of one claim call.
  std::vector<claim_answer> claim(std::vector<claim_request> requests,
                                  const std::string& worker = "w1",
                                  std::chrono::seconds lease = 300s,
                                  pg_work_repository* r = nullptr) {
    auto& target = r != nullptr ? *r : *work;
    auto res = await<std::vector<claim_answer>>(
        [&](auto cb) { target.claim(std::move(requests), worker, lease, cb); });
    EXPECT_TRUE(res) << res.error().describe();
    return res ? *res : std::vector<claim_answer>{};
  }

  /// The answer to one claim request.
  claim_answer claim_one(const claim_request& request, const std::string& worker = "w1",
                         std::chrono::seconds lease = 300s, pg_work_repository* r = nullptr) {
    auto got = claim({request}, worker, lease, r);
    EXPECT_EQ(got.size(), 1u);
    return got.empty() ? claim_answer{} : got.front();
  }

  /// Claims the ingestion's work item for the ingest stage; fails the test when not granted.
  claim_ref claimed(uuid id, const std::string& worker = "w1", std::chrono::seconds lease = 300s) {
    auto a = claim_one(ingest_request(id), worker, lease);
    EXPECT_EQ(a.outcome, claim_outcome::granted) << to_string(a.outcome) << ": " << a.detail;
    return a.work.ref();
  }

  /// Simulates the passing of the lease (instead of sleeping through it).
  void expire_lease(uuid id) {
    db->query("UPDATE work_item SET lease_expires_at = now() - interval '1 minute' WHERE id = $1",
              {id.str()});
  }

  /// Simulates an hour without a due time or a sign of the items' messages.
  void long_forgotten(const std::string& where = "true") {
    db->query("UPDATE work_item SET due_at = now() - interval '1 hour', "
              "message_seen_at = now() - interval '1 hour' WHERE "
              + where);
  }

  /// A column (or expression) of the work item.
  std::string item(uuid id, const std::string& expr) {
    return db->scalar("SELECT (" + expr + ")::text FROM work_item WHERE id = $1", {id.str()});
  }
  /// A column (or expression) of the ingestion.
  std::string ingestion(uuid id, const std::string& expr) {
    return db->scalar("SELECT (" + expr + ")::text FROM ingestion WHERE id = $1", {id.str()});
  }
  /// A column (or expression) of the ingestion's document.
  std::string document(uuid ingestion_id, const std::string& expr) {
    return db->scalar("SELECT (" + expr
                          + ")::text FROM document WHERE id = "
                            "(SELECT document_id FROM ingestion WHERE id = $1)",
                      {ingestion_id.str()});
  }
  /// Everything of the work item, its ingestion and its document, as one text: to see that a
  /// write changed nothing.
  std::string snapshot(uuid id) {
    return db->scalar("SELECT row_to_json(w)::text || row_to_json(i)::text || row_to_json(d)::text "
                      "FROM work_item AS w JOIN ingestion AS i ON i.id = w.id "
                      "JOIN document AS d ON d.id = i.document_id WHERE w.id = $1",
                      {id.str()});
  }
  int64_t count(const std::string& sql,
                const std::vector<std::optional<std::string>>& params = {}) {
    return std::stoll(db->scalar(sql, params));
  }
  /// Audit rows of the item for `step` ("" : every step).
  int64_t audit_rows(uuid id, const std::string& step = "") {
    return count(
        "SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND ($2 = '' OR step = $2)",
        {id.str(), step});
  }
  /// Messages naming `id` on the Postgres queue `queue` ("" : any queue).
  int64_t messages(uuid id, const std::string& queue = "") {
    return count(
        "SELECT count(*) FROM queue_message WHERE body = $1 AND ($2 = '' OR queue_name = $2)",
        {id.str(), queue});
  }
  /// Outbox rows (SQS messages) naming `id` for `queue`.
  int64_t outbox_rows(uuid id, const std::string& queue = "") {
    return count(
        "SELECT count(*) FROM event_outbox WHERE body = $1 AND ($2 = '' OR destination = $2)",
        {id.str(), queue});
  }
  /// Status events of `type` about the document of `ingestion`.
  int64_t events(uuid ingestion, const std::string& type) {
    return count("SELECT count(*) FROM event_outbox WHERE destination = 'events' "
                 "AND (body::jsonb)->>'type' = $2 AND ((body::jsonb)->>'ingestion_id' = $1 "
                 "OR (body::jsonb)->>'document_id' = $1)",
                 {ingestion.str(), type});
  }

  result<failure_outcome> fail(claim_ref ref, error err, int32_t max_attempts = 3,
                               std::chrono::seconds retry = 300s,
                               std::vector<audit_event> audit = {},
                               std::optional<work_move> move = std::nullopt) {
    return await<failure_outcome>([&](auto cb) {
      work->record_failure(ref, failure(std::move(err), max_attempts, std::move(move)), retry,
                           std::move(audit), cb);
    });
  }
  result<void> release(claim_ref ref, std::vector<audit_event> audit = {},
                       std::chrono::seconds delay = std::chrono::seconds{0}) {
    return await<void>([&](auto cb) { work->release(ref, delay, std::move(audit), cb); });
  }
  result<void> cancelled(claim_ref ref, std::vector<audit_event> audit = {}) {
    return await<void>([&](auto cb) { work->record_cancelled(ref, std::move(audit), cb); });
  }
  result<void> complete_ingestion(ingest_completion c) {
    auto r
        = await<std::vector<result<void>>>([&](auto cb) { ingest->complete({std::move(c)}, cb); });
    if (!r)
      return r.error();
    EXPECT_EQ(r->size(), 1u);
    return r->front();
  }
  result<std::vector<claim_ref>> renew(std::vector<claim_ref> refs,
                                       std::chrono::seconds lease = 600s) {
    return await<std::vector<claim_ref>>(
        [&](auto cb) { work->renew_leases(std::move(refs), lease, cb); });
  }

  /// The number of items a revival of the ingest stage sends (60 s threshold).
  result<int64_t> revive(const std::string& stage = "ingest", const std::string& size_class = "",
                         const std::string& queue = ingest_queue, int limit = 100,
                         pg_work_repository* r = nullptr) {
    auto& target = r != nullptr ? *r : *work;
    return await<int64_t>([&](auto cb) {
      target.revive(revive_request{stage, size_class, queue, 60s, limit}, cb);
    });
  }

  /// Another session of the test's schema, for holding locks.
  std::unique_ptr<pg::connection> session() {
    auto c = std::make_unique<pg::connection>(db->url());
    EXPECT_TRUE(c->ensure(true));
    return c;
  }

  /// Waits (with a deadline) until a backend of the adapters under test waits for a lock.
  bool adapter_waits_for_a_lock(std::chrono::seconds deadline = 30s) {
    auto until = std::chrono::steady_clock::now() + deadline;
    while (db->scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND "
                      "wait_event_type = 'Lock'",
                      {db->name()})
           == "0") {
      if (std::chrono::steady_clock::now() > until)
        return false;
      std::this_thread::sleep_for(5ms); // polling a condition, with a deadline
    }
    return true;
  }

  static inline const uuid tenant_ = uuid::v4();
  std::unique_ptr<pg_work_repository> work;
  std::unique_ptr<pg_ingest_repository> ingest;
  /// Creates the ingestions that the repositories work on, and the status look-ups.
  std::unique_ptr<pg_intake_repository> intake_repo;
};

} // namespace ingestd::test
