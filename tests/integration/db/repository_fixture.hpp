// The fixture of the pg_repository tests (repository_test.cpp, repository_recovery_test.cpp): a
// fresh schema, the repository and the intake repository over it, and helpers that make and claim
// ingestions.
#pragma once

#include <algorithm>
#include <barrier>
#include <mutex>
#include <map>
#include <condition_variable>
#include <future>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_repository.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

namespace ingestd::test {

using namespace std::chrono_literals;

class repository_test : public postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    if (HasFatalFailure())
      return;
    repo = std::make_unique<pg_repository>(db->url());
    intake_repo = std::make_unique<pg_intake_repository>(db->url());
  }

  void TearDown() override {
    repo.reset();
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
    return r;
  }

  /// A new in-progress ingestion of a new document.
  uuid new_ingestion() {
    auto res = intake_repo->create_ingestion(intake(uuid::v4().str()), 30s);
    EXPECT_TRUE(res) << res.error().describe();
    return res->ingestion_id;
  }

  std::optional<claimed_ingestion> claim_one(uuid id, uuid token, repository* r = nullptr,
                                             std::chrono::seconds lease = 300s,
                                             std::string worker = "w1", int32_t max_attempts = 3) {
    auto& target = r != nullptr ? *r : *repo;
    auto res = await<std::vector<std::optional<claimed_ingestion>>>([&](auto cb) {
      target.claim({claim_request{id, token, max_attempts}}, worker, lease, cb);
    });
    EXPECT_TRUE(res) << res.error().describe();
    EXPECT_EQ(res->size(), 1u);
    return res->at(0);
  }

  /// Simulates the passing of the lease (instead of sleeping through it).
  void expire_lease(uuid id) {
    db->query("UPDATE ingestion SET lease_expires_at = now() - interval '1 minute' WHERE id = $1",
              {id.str()});
  }

  /// Simulates an hour without a due time or a sign of the ingestion's message.
  void long_forgotten(const std::string& where) {
    db->query("UPDATE ingestion SET due_at = now() - interval '1 hour', "
              "message_seen_at = now() - interval '1 hour' WHERE " + where);
  }

  /// A message of the Postgres queue whose body names `id`.
  void queue_message_for(uuid id, const std::string& queue_name = "ingest") {
    db->query("INSERT INTO queue_message (id, queue_name, body, visible_at, sent_at) "
              "VALUES ($1, $2, $3, now() - interval '2 hours', now() - interval '2 hours')",
              {uuid::v4().str(), queue_name, id.str()});
  }

  /// The ids a sweep of `target` rescues (60 s threshold).
  static result<std::vector<uuid>> rescued_ids(repository& target, int limit = 100) {
    auto got = await<std::vector<stranded_ingestion>>([&](auto cb) { target.rescue_stranded(60s, limit, cb); });
    if (!got)
      return got.error();
    std::vector<uuid> ids;
    for (auto& s : *got)
      ids.push_back(s.id);
    return ids;
  }

  std::vector<uuid> rescue(int limit = 100, pg_repository* r = nullptr) {
    auto got = rescued_ids(r != nullptr ? *r : *repo, limit);
    EXPECT_TRUE(got) << got.error().describe();
    return got ? *got : std::vector<uuid>{};
  }

  std::string column(uuid id, const std::string& expr) {
    return db->scalar("SELECT " + expr + " FROM ingestion WHERE id = $1", {id.str()});
  }

  result<failure_outcome> fail(lease_ref ref, error err, int max_attempts = 3,
                               std::chrono::seconds retry = 300s) {
    failure_record rec;
    rec.error = std::move(err);
    rec.max_attempts = max_attempts;
    return await<failure_outcome>([&](auto cb) { repo->record_failure(ref, rec, retry, cb); });
  }

  static inline const uuid tenant_ = uuid::v4();
  std::unique_ptr<pg_repository> repo;
  /// Creates the ingestions that the worker's repository works on, and the status look-ups.
  std::unique_ptr<pg_intake_repository> intake_repo;
};

inline completion make_completion(lease_ref ref, std::string data = R"({"invoice_number": "A-1"})") {
  completion c;
  c.ref = ref;
  c.record.structured_data = std::move(data);
  c.record.valid_structured_data = true;
  c.record.input_tokens = 1200;
  c.record.output_tokens = 300;
  c.record.model = "local-rules";
  return c;
}


} // namespace ingestd::test
