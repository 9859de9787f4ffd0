// Claims coalesced by pg_work_repository: a claim goes at once when no claim statement runs; the
// claims that arrive while one runs (here: while another session holds work_item, so that the
// first statement waits) go together in the next statement, at most max_batch requests and one
// worker and lease per statement; every caller gets its own answers, duplicate claims of one item
// have one winner, an error of a coalesced statement reaches each of its callers once, and the
// destructor runs the calls already made; a claim and a completion of more than 100 items (planned
// for their values) do what a few do.
#include <atomic>

#include "tests/integration/db/work_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::work_test;
using test::ingest_request;

namespace {

class coalescing_test : public work_test {
protected:
  /// `n` items of the ingest stage nobody holds.
  std::vector<uuid> items(int n) {
    std::vector<uuid> ids;
    for (auto& id : db->add_ingestions(n))
      ids.push_back(*uuid::parse(id));
    return ids;
  }

  /// Another session holding work_item until it rolls back.
  std::unique_ptr<pg::connection> hold_work_items() {
    auto c = session();
    EXPECT_TRUE(c->exec_simple("BEGIN"));
    EXPECT_TRUE(c->exec_simple("LOCK TABLE work_item IN ACCESS EXCLUSIVE MODE"));
    return c;
  }
};

/// Counts how often each caller is answered.
struct call_counts {
  std::mutex mtx;
  std::map<std::string, int> calls;
  void hit(const std::string& key) {
    std::lock_guard g{mtx};
    ++calls[key];
  }
};

} // namespace

TEST_F(coalescing_test, a_claim_goes_at_once_when_no_claim_statement_runs) {
  auto ids = items(2);
  EXPECT_EQ(claim_one(ingest_request(ids[0])).outcome, claim_outcome::granted);
  EXPECT_EQ(work->claim_statements(), 1u);
  EXPECT_EQ(claim_one(ingest_request(ids[1])).outcome, claim_outcome::granted);
  EXPECT_EQ(work->claim_statements(), 2u);
}

TEST_F(coalescing_test, claims_arriving_while_one_runs_go_together_in_the_next_statement) {
  constexpr int n = 200;
  auto ids = items(n + 3);
  test::answers<std::vector<claim_answer>> got;
  std::vector<claim_request> first{ingest_request(ids[0])};
  auto locker = hold_work_items();
  work->claim(first, "w1", 60s, got.slot("first"));
  // The first statement waits for the table; every later call arrives while it runs.
  ASSERT_TRUE(adapter_waits_for_a_lock());
  std::vector<claim_request> single(n), duplicate(10);
  for (int i = 1; i < n; ++i) {
    single[i] = ingest_request(ids[i]);
    work->claim({single[i]}, "w1", 60s, got.slot("single " + std::to_string(i)));
  }
  // Ten items claimed a second time at once (a duplicate delivery), the first among them.
  for (int i = 0; i < 10; ++i) {
    duplicate[i] = ingest_request(ids[i]);
    work->claim({duplicate[i]}, "w1", 60s, got.slot("duplicate " + std::to_string(i)));
  }
  // One call of several requests gets its answers in its order.
  std::vector<claim_request> several{ingest_request(ids[n + 2]), ingest_request(uuid::v7()),
                                     ingest_request(ids[n + 1])};
  work->claim(several, "w1", 60s, got.slot("several"));
  EXPECT_EQ(got.size(), 0u);
  ASSERT_TRUE(locker->exec_simple("ROLLBACK"));
  ASSERT_TRUE(got.wait_for(1 + (n - 1) + 10 + 1));
  // The one that waited for the table, then all the others together.
  EXPECT_EQ(work->claim_statements(), 2u);

  auto answer = [&](const std::string& key) {
    auto r = got.at(key);
    EXPECT_TRUE(r) << key << ": " << r.error().describe();
    EXPECT_EQ(r ? r->size() : 0u, key == "several" ? 3u : 1u) << key;
    return r && !r->empty() ? r->front() : claim_answer{};
  };
  auto f = answer("first");
  ASSERT_EQ(f.outcome, claim_outcome::granted);
  EXPECT_EQ(f.work.token, first[0].token);
  for (int i = 1; i < n; ++i) {
    auto a = answer("single " + std::to_string(i));
    auto d = i < 10 ? answer("duplicate " + std::to_string(i)) : claim_answer{};
    auto a_won = a.outcome == claim_outcome::granted;
    auto d_won = d.outcome == claim_outcome::granted;
    EXPECT_TRUE(a_won != d_won || i >= 10) << "exactly one of two claims of item " << i << " wins";
    if (i >= 10) {
      EXPECT_TRUE(a_won) << i;
    }
    auto& winner = a_won ? single[i] : duplicate[i];
    EXPECT_EQ(item(ids[i], "claim_token"), winner.token.str()) << i;
    EXPECT_EQ((a_won ? a : d).work.token, winner.token) << i;
    EXPECT_EQ((a_won ? d : a).outcome, i < 10 ? claim_outcome::held : claim_outcome::unknown) << i;
  }
  // The first item's duplicate came while the first claim held it.
  EXPECT_EQ(answer("duplicate 0").outcome, claim_outcome::held);
  auto s = got.at("several");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->size(), 3u);
  EXPECT_EQ(s->at(0).outcome, claim_outcome::granted);
  EXPECT_EQ(s->at(0).work.item, ids[n + 2]);
  EXPECT_EQ(s->at(0).work.token, several[0].token);
  EXPECT_EQ(s->at(1).outcome, claim_outcome::unknown);
  EXPECT_EQ(s->at(2).outcome, claim_outcome::granted);
  EXPECT_EQ(s->at(2).work.item, ids[n + 1]);
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE claim_token IS NOT NULL"), n + 2);
}

TEST_F(coalescing_test, a_statement_takes_at_most_max_batch_requests_and_one_worker_and_lease) {
  pg_work_options opts;
  opts.max_batch = 10;
  auto capped = std::make_unique<pg_work_repository>(db->url(), opts);
  auto ids = items(1 + 25 + 4);
  test::answers<std::vector<claim_answer>> got;
  auto locker = hold_work_items();
  capped->claim({ingest_request(ids[0])}, "w1", 60s, got.slot("first"));
  ASSERT_TRUE(adapter_waits_for_a_lock());
  for (int i = 1; i <= 25; ++i)
    capped->claim({ingest_request(ids[i])}, "w1", 60s, got.slot(std::to_string(i)));
  ASSERT_TRUE(locker->exec_simple("ROLLBACK"));
  ASSERT_TRUE(got.wait_for(26));
  // 1, then 10 + 10 + 5.
  EXPECT_EQ(capped->claim_statements(), 4u);
  for (int i = 1; i <= 25; ++i) {
    auto r = got.at(std::to_string(i));
    ASSERT_TRUE(r) << r.error().describe();
    EXPECT_EQ(r->front().outcome, claim_outcome::granted) << i;
  }

  // Calls of another worker or another lease go in a statement of their own, each with its own.
  locker = hold_work_items();
  capped->claim({ingest_request(ids[26])}, "w1", 60s, got.slot("w1 first"));
  ASSERT_TRUE(adapter_waits_for_a_lock());
  capped->claim({ingest_request(ids[27])}, "w2", 600s, got.slot("w2 a"));
  capped->claim({ingest_request(ids[28])}, "w2", 600s, got.slot("w2 b"));
  capped->claim({ingest_request(ids[29])}, "w3", 60s, got.slot("w3"));
  ASSERT_TRUE(locker->exec_simple("ROLLBACK"));
  ASSERT_TRUE(got.wait_for(30));
  EXPECT_EQ(capped->claim_statements(), 4u + 3u);
  EXPECT_EQ(item(ids[27], "claimed_by || ' ' || (lease_expires_at > now() + interval '590 s')"),
            "w2 true");
  EXPECT_EQ(item(ids[28], "claimed_by || ' ' || (lease_expires_at > now() + interval '590 s')"),
            "w2 true");
  EXPECT_EQ(item(ids[29], "claimed_by || ' ' || (lease_expires_at < now() + interval '70 s')"),
            "w3 true");
}

TEST_F(coalescing_test, an_error_of_a_coalesced_statement_reaches_each_of_its_callers_once) {
  // The lock timeout has to outlast the time from the first statement's wait to the three calls
  // behind it (they coalesce into the second statement only while the first one runs): 3 s,
  // where the test thread takes a few milliseconds unless the machine stalls it.
  pg_work_options opts;
  opts.session = pg::session_options{30s, 3s, 30s};
  auto repo = std::make_unique<pg_work_repository>(db->url(), opts);
  auto ids = items(4);
  auto counts = std::make_shared<call_counts>();
  test::answers<std::vector<claim_answer>> got;
  auto call = [&](int i) {
    auto key = std::to_string(i);
    auto slot = got.slot(key);
    repo->claim({ingest_request(ids[i])}, "w1", 60s,
                [counts, key, slot](result<std::vector<claim_answer>> r) {
                  counts->hit(key);
                  slot(std::move(r));
                });
  };
  auto locker = hold_work_items();
  call(0);
  ASSERT_TRUE(adapter_waits_for_a_lock());
  call(1);
  call(2);
  call(3);
  // Both statements wait out the lock timeout while the table stays held.
  ASSERT_TRUE(got.wait_for(4));
  ASSERT_TRUE(locker->exec_simple("ROLLBACK"));
  EXPECT_EQ(repo->claim_statements(), 2u);
  for (int i = 0; i < 4; ++i) {
    auto r = got.at(std::to_string(i));
    ASSERT_FALSE(r) << i;
    EXPECT_EQ(r.error().code, "pg.55P03") << r.error().describe();
    EXPECT_TRUE(r.error().transient());
  }
  // The next claim runs.
  EXPECT_EQ(claim_one(ingest_request(ids[1]), "w1", 60s, repo.get()).outcome,
            claim_outcome::granted);
  repo.reset();
  std::lock_guard g{counts->mtx};
  EXPECT_EQ(counts->calls.size(), 4u);
  for (auto& [key, n] : counts->calls)
    EXPECT_EQ(n, 1) << "caller " << key;
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE claim_token IS NOT NULL"), 1);
}

TEST_F(coalescing_test, destroying_the_repository_runs_the_calls_already_made) {
  auto ids = items(3);
  auto repo = std::make_unique<pg_work_repository>(db->url());
  test::answers<std::vector<claim_answer>> got;
  auto locker = hold_work_items();
  repo->claim({ingest_request(ids[0])}, "w1", 60s, got.slot("0"));
  ASSERT_TRUE(adapter_waits_for_a_lock());
  repo->claim({ingest_request(ids[1])}, "w1", 60s, got.slot("1"));
  repo->claim({ingest_request(ids[2])}, "w1", 60s, got.slot("2"));
  auto destroyed = std::async(std::launch::async, [&] { repo.reset(); });
  EXPECT_EQ(destroyed.wait_for(200ms), std::future_status::timeout)
      << "it did not wait for the running claim";
  ASSERT_TRUE(locker->exec_simple("ROLLBACK"));
  ASSERT_EQ(destroyed.wait_for(30s), std::future_status::ready);
  ASSERT_EQ(got.size(), 3u);
  for (auto key : {"0", "1", "2"}) {
    auto r = got.at(key);
    ASSERT_TRUE(r) << key << ": " << r.error().describe();
    EXPECT_EQ(r->front().outcome, claim_outcome::granted) << key;
  }
}

TEST_F(coalescing_test, a_batch_of_many_items_is_claimed_and_completed_as_a_few_are) {
  // A batch of more than 100 rows is planned for its own values (pg::for_batch); the statements
  // and what they write are the same.
  constexpr size_t n = 150;
  std::vector<claim_request> requests;
  requests.reserve(n);
  for (size_t i = 0; i < n; ++i)
    requests.push_back(ingest_request(new_ingestion()));
  auto statements_before = work->claim_statements();
  auto answers = claim(requests);
  ASSERT_EQ(answers.size(), n);
  // At most two statements: one of them carried more than 100 requests.
  EXPECT_LE(work->claim_statements() - statements_before, 2u);
  std::vector<ingest_completion> completions;
  completions.reserve(n);
  for (auto& a : answers) {
    ASSERT_EQ(a.outcome, claim_outcome::granted) << a.detail;
    completions.push_back(test::completing(a.work.ref()));
  }
  auto done = await<std::vector<result<void>>>(
      [&](auto cb) { ingest->complete(std::move(completions), cb); });
  ASSERT_TRUE(done) << done.error().describe();
  ASSERT_EQ(done->size(), n);
  for (auto& r : *done)
    EXPECT_TRUE(r) << r.error().describe();
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE status = 'completed'"),
            static_cast<int64_t>(n));
  EXPECT_EQ(count("SELECT count(*) FROM ingestion WHERE status = 'completed' "
                  "AND structured_data IS NOT NULL"),
            static_cast<int64_t>(n));
}
