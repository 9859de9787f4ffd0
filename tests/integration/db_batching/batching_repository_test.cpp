// batching_repository: concurrent claims, completions and events from many threads are coalesced
// into few statements of the real pg_repository, every caller gets its own answer (fencing and
// duplicate claims intact), and an error of a batched call reaches every caller in the batch.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "adapters/db/batching_repository.hpp"
#include "adapters/db/pg_repository.hpp"
#include "tests/support/fakes/fakes.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace ingestd::test;
using namespace std::chrono_literals;

namespace {

std::vector<uuid> add_ingestions(pg_schema& db, int n) {
  auto rows = db.query("WITH d AS (INSERT INTO document (id, tenant_id, content_hash, file_path) "
                       "SELECT g, gen_random_uuid(), g::text, 'documents/' || g FROM "
                       "(SELECT gen_random_uuid() AS g FROM generate_series(1, $1::integer)) x RETURNING id) "
                       "INSERT INTO ingestion (id, document_id, uploaded_by) "
                       "SELECT gen_random_uuid(), id, gen_random_uuid() FROM d RETURNING id",
                       {std::to_string(n)});
  std::vector<uuid> ids;
  for (auto& r : rows)
    ids.push_back(*uuid::parse(*r[0]));
  return ids;
}

class batching_test : public postgres_test {};

} // namespace

TEST_F(batching_test, concurrent_calls_are_coalesced_and_answered_one_by_one) {
  constexpr int n = 200;
  auto ids = add_ingestions(*db, n);
  auto pg = std::make_shared<pg_repository>(db->url(), pg_repository_options{2});
  batching_repository repo{pg, batching_options{std::chrono::microseconds{2000}, 500}};

  // Every ingestion claimed from its own thread, plus the first ten claimed a second time at once
  // (a duplicate delivery): exactly one claim per ingestion wins.
  std::vector<std::optional<claimed_ingestion>> won(n), dup(10);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int i = 0; i < n + 10; ++i)
    threads.emplace_back([&, i] {
      auto id = ids[static_cast<size_t>(i % n)];
      auto r = await<std::vector<std::optional<claimed_ingestion>>>(
        [&](auto cb) { repo.claim({claim_request{id, uuid::v7()}}, "w1", 60s, cb); });
      if (!r || r->size() != 1) {
        ++errors;
        return;
      }
      (i < n ? won[static_cast<size_t>(i)] : dup[static_cast<size_t>(i - n)]) = r->front();
    });
  for (auto& t : threads)
    t.join();
  threads.clear();
  ASSERT_EQ(errors.load(), 0);
  for (int i = 0; i < 10; ++i)
    EXPECT_NE(won[static_cast<size_t>(i)].has_value(), dup[static_cast<size_t>(i)].has_value())
      << "exactly one of two concurrent claims of the same ingestion wins";
  for (int i = 10; i < n; ++i) {
    ASSERT_TRUE(won[static_cast<size_t>(i)]);
    EXPECT_EQ(won[static_cast<size_t>(i)]->ingestion_id, ids[static_cast<size_t>(i)]);
  }
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion WHERE claim_token IS NOT NULL"), std::to_string(n));

  // Completions: each with its own token, except one with a wrong token (fenced out).
  std::vector<result<void>> outcomes(n, result<void>{});
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      auto c = won[static_cast<size_t>(i)] ? *won[static_cast<size_t>(i)] : *dup[static_cast<size_t>(i)];
      lease_ref ref{c.ingestion_id, i == 42 ? uuid::v7() : c.claim_token};
      auto r = await<std::vector<result<void>>>([&](auto cb) {
        repo.complete({completion{ref, completion_record{R"({"total": 1})", true, 1, 2, "m"}}}, cb);
      });
      outcomes[static_cast<size_t>(i)] = r && r->size() == 1 ? r->front() : result<void>{error::make_transient("x", "y")};
      // And the job's audit events.
      auto e = await<void>([&](auto cb) {
        repo.append_events({audit_event{ref.ingestion_id, "complete", "ok", "", 1, "w1", 0},
                            audit_event{ref.ingestion_id, "ack", "ok", "", 1, "w1", 0}},
                           cb);
      });
      if (!e)
        ++errors;
    });
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(errors.load(), 0);
  for (int i = 0; i < n; ++i) {
    if (i == 42) {
      ASSERT_FALSE(outcomes[static_cast<size_t>(i)]);
      EXPECT_EQ(outcomes[static_cast<size_t>(i)].error().cls, error_class::claim_lost);
    } else {
      EXPECT_TRUE(outcomes[static_cast<size_t>(i)]) << i << ": " << outcomes[static_cast<size_t>(i)].error().describe();
    }
  }
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion WHERE status = 'completed'"), std::to_string(n - 1));
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion_event"), std::to_string(2 * n));

  auto s = repo.stats();
  EXPECT_EQ(s.claim_calls_in, static_cast<uint64_t>(n + 10));
  EXPECT_EQ(s.complete_calls_in, static_cast<uint64_t>(n));
  EXPECT_EQ(s.event_calls_in, static_cast<uint64_t>(n));
  // Coalesced: far fewer statements than calls.
  EXPECT_LT(s.claim_calls_out, s.claim_calls_in / 2) << s.claim_calls_out;
  EXPECT_LT(s.complete_calls_out, s.complete_calls_in / 2) << s.complete_calls_out;
  EXPECT_LT(s.event_calls_out, s.event_calls_in / 2) << s.event_calls_out;
}

TEST(batching_repository, an_error_of_the_batched_call_reaches_every_caller_once) {
  auto fake = std::make_shared<fake_repository>();
  batching_repository repo{fake, batching_options{std::chrono::microseconds{200'000}, 100}};
  fake->fail_next("claim", error::make_transient("pg.connection", "gone"));
  std::vector<uuid> ids{fake->add("a"), fake->add("b"), fake->add("c")};
  std::vector<std::thread> threads;
  std::atomic<int> transient{0};
  for (auto id : ids)
    threads.emplace_back([&, id] {
      auto r = await<std::vector<std::optional<claimed_ingestion>>>(
        [&](auto cb) { repo.claim({claim_request{id, uuid::v7()}}, "w1", 60s, cb); });
      if (!r && r.error().cls == error_class::transient)
        ++transient;
    });
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(transient.load(), 3) << "three calls within the 200 ms window: one batched call, failed";
  EXPECT_EQ(repo.stats().claim_calls_out, 1u);
  // The next claim goes through on its own batch.
  auto r = await<std::vector<std::optional<claimed_ingestion>>>(
    [&](auto cb) { repo.claim({claim_request{ids[0], uuid::v7()}}, "w1", 60s, cb); });
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->front());
}

TEST(batching_repository, the_destructor_sends_what_is_pending) {
  auto fake = std::make_shared<fake_repository>();
  auto id = fake->add("a");
  std::atomic<int> answered{0};
  {
    batching_repository repo{fake, batching_options{std::chrono::seconds{60}, 100}};
    repo.append_events({audit_event{id, "claim", "ok", "", 1, "w1", 0}}, [&](result<void> r) {
      if (r)
        ++answered;
    });
  }
  EXPECT_EQ(answered.load(), 1);
  EXPECT_EQ(fake->events().size(), 1u);
}
