// batching_repository: claims, completions and events that arrive while one statement runs are
// coalesced into the next statement of the real pg_repository, every caller gets its own answer
// (fencing and duplicate claims intact), an error of a batched call reaches every caller in the
// batch, and the destructor waits for what runs.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "adapters/db/batching_repository.hpp"
#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_repository.hpp"
#include "tests/support/fakes/fakes.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace ingestd::test;
using namespace std::chrono_literals;

namespace {

std::vector<uuid> add_ingestions(pg_schema& db, int n) {
  std::vector<uuid> ids;
  for (auto& id : db.add_ingestions(n))
    ids.push_back(*uuid::parse(id));
  return ids;
}

class batching_test : public postgres_test {};

} // namespace

TEST_F(batching_test, calls_arriving_while_one_runs_are_coalesced_and_answered_one_by_one) {
  constexpr int n = 200;
  auto ids = add_ingestions(*db, n);
  auto pg = std::make_shared<pg_repository>(db->url(), pg_repository_options{2});
  batching_repository repo{pg};
  // Another session holds a table while every call arrives: the first statement waits for it,
  // so all the others can only go together in the next one.
  auto hold_table = [&](const std::string& table) {
    auto c = std::make_unique<pg::connection>(db->url());
    EXPECT_TRUE(c->exec_simple("BEGIN"));
    EXPECT_TRUE(c->exec_simple("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE"));
    return c;
  };
  auto arrived = [&](auto field, uint64_t want) {
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (repo.stats().*field < want && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms); // polling a condition, with a deadline
    return repo.stats().*field >= want;
  };
  using counters = batching_repository::counters;

  // Every ingestion claimed from its own thread, plus the first ten claimed a second time at once
  // (a duplicate delivery): exactly one claim per ingestion wins.
  std::vector<std::optional<claimed_ingestion>> won(n), dup(10);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  auto locker = hold_table("ingestion");
  threads.reserve(won.size() + dup.size());
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
  EXPECT_TRUE(arrived(&counters::claim_calls_in, n + 10));
  EXPECT_TRUE(locker->exec_simple("ROLLBACK"));
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
  std::vector<lease_ref> refs;
  for (int i = 0; i < n; ++i) {
    auto c = won[static_cast<size_t>(i)] ? *won[static_cast<size_t>(i)] : *dup[static_cast<size_t>(i)];
    refs.push_back(lease_ref{c.ingestion_id, i == 42 ? uuid::v7() : c.claim_token});
  }
  std::vector<result<void>> outcomes(n, result<void>{});
  locker = hold_table("ingestion");
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      auto r = await<std::vector<result<void>>>([&](auto cb) {
        repo.complete({completion{refs[static_cast<size_t>(i)], completion_record{R"({"total": 1})", true, 1, 2, "m"}}}, cb);
      });
      outcomes[static_cast<size_t>(i)] = r && r->size() == 1 ? r->front() : result<void>{error::make_transient("x", "y")};
    });
  EXPECT_TRUE(arrived(&counters::complete_calls_in, n));
  EXPECT_TRUE(locker->exec_simple("ROLLBACK"));
  for (auto& t : threads)
    t.join();
  threads.clear();
  for (int i = 0; i < n; ++i) {
    if (i == 42) {
      ASSERT_FALSE(outcomes[static_cast<size_t>(i)]);
      EXPECT_EQ(outcomes[static_cast<size_t>(i)].error().cls, error_class::claim_lost);
    } else {
      EXPECT_TRUE(outcomes[static_cast<size_t>(i)]) << i << ": " << outcomes[static_cast<size_t>(i)].error().describe();
    }
  }
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion WHERE status = 'completed'"), std::to_string(n - 1));

  // And the jobs' audit events.
  locker = hold_table("ingestion_event");
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      auto id = refs[static_cast<size_t>(i)].ingestion_id;
      auto e = await<void>([&](auto cb) {
        repo.append_events({audit_event{id, "complete", "ok", "", 1, "w1", 0}, audit_event{id, "ack", "ok", "", 1, "w1", 0}},
                           cb);
      });
      if (!e)
        ++errors;
    });
  EXPECT_TRUE(arrived(&counters::event_calls_in, n));
  EXPECT_TRUE(locker->exec_simple("ROLLBACK"));
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion_event"), std::to_string(2 * n));

  auto s = repo.stats();
  EXPECT_EQ(s.claim_calls_in, static_cast<uint64_t>(n + 10));
  EXPECT_EQ(s.complete_calls_in, static_cast<uint64_t>(n));
  EXPECT_EQ(s.event_calls_in, static_cast<uint64_t>(n));
  // The one that waited for the table, then all the others together.
  EXPECT_LE(s.claim_calls_out, 2u);
  EXPECT_LE(s.complete_calls_out, 2u);
  EXPECT_LE(s.event_calls_out, 2u);
}

TEST(batching_repository, a_call_goes_at_once_when_none_runs) {
  auto fake = std::make_shared<fake_repository>();
  batching_repository repo{fake};
  auto id = fake->add("a");
  auto r = await<std::vector<std::optional<claimed_ingestion>>>(
    [&](auto cb) { repo.claim({claim_request{id, uuid::v7()}}, "w1", 60s, cb); });
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->front());
  EXPECT_EQ(repo.stats().claim_calls_out, 1u);
}

TEST(batching_repository, an_error_of_the_batched_call_reaches_every_caller_in_it_once) {
  auto fake = std::make_shared<fake_repository>();
  batching_repository repo{fake};
  std::vector<lease_ref> refs;
  for (auto name : {"a", "b", "c"}) {
    auto id = fake->add(name);
    auto token = uuid::v7();
    std::optional<claimed_ingestion> got;
    fake->claim({claim_request{id, token}}, "w1", 60s, [&](auto r) { got = r->front(); });
    ASSERT_TRUE(got);
    refs.push_back({id, token});
  }
  completion_record rec{R"({"total": 1})", true, 0, 0, "m"};
  std::vector<result<void>> answers(3, result<void>{error::make_transient("none", "no answer")});
  auto call = [&](size_t i) {
    repo.complete({completion{refs[i], rec}}, [&, i](result<std::vector<result<void>>> r) {
      answers[i] = r ? r->front() : result<void>{r.error()};
    });
  };
  fake->hold("complete");
  call(0); // runs, its answer held
  fake->fail_next("complete", error::make_transient("pg.connection", "gone"));
  call(1); // these two wait for it, and go together
  call(2);
  fake->unhold("complete");
  EXPECT_TRUE(answers[0]) << answers[0].error().describe();
  for (size_t i : {1u, 2u}) {
    ASSERT_FALSE(answers[i]);
    EXPECT_EQ(answers[i].error().code, "pg.connection");
  }
  EXPECT_EQ(repo.stats().complete_calls_out, 2u);
}

TEST(batching_repository, the_destructor_waits_for_what_runs_and_what_waits_behind_it) {
  auto fake = std::make_shared<fake_repository>();
  auto id = fake->add("a");
  std::atomic<int> answered{0};
  auto repo = std::make_unique<batching_repository>(fake);
  auto token = uuid::v7();
  fake->claim({claim_request{id, token}}, "w1", 60s, [](auto) {});
  fake->hold("complete");
  for (int i = 0; i < 2; ++i)
    repo->complete({completion{lease_ref{id, token}, completion_record{R"({"total": 1})", true, 0, 0, "m"}}},
                   [&](const result<std::vector<result<void>>>& r) {
                     if (r)
                       ++answered;
                   });
  std::thread destroyer([&] { repo.reset(); });
  fake->unhold("complete");
  destroyer.join();
  EXPECT_EQ(answered.load(), 2);
}
