// One bad value fails only its own item: batches of completions, failures, transcription records
// and audit events where one item carries a NUL, a character cut in half or a value PostgreSQL
// refuses; the rest of the batch is stored. And the transcription statement's id-ordered locks.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "adapters/db/batching_repository.hpp"
#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_repository.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using namespace std::string_literals;
using ingestd::test::await;

namespace {

const std::string cut_euro = "\xE2\x82"; // the first two of the three bytes of U+20AC
const std::string fffd = "\xEF\xBF\xBD";

class bad_values_test : public ingestd::test::postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    if (HasFatalFailure())
      return;
    repo = std::make_shared<pg_repository>(db->url());
  }

  void TearDown() override {
    repo.reset();
    postgres_test::TearDown();
  }

  /// `n` in-progress ingestions, claimed by one call, in id order.
  std::vector<lease_ref> held(int n) {
    std::vector<claim_request> requests;
    for (auto& id : db->add_ingestions(n))
      requests.push_back({*uuid::parse(id), uuid::v4()});
    auto claimed = await<std::vector<std::optional<claimed_ingestion>>>(
      [&](auto cb) { repo->claim(requests, "w1", 600s, cb); });
    std::vector<lease_ref> refs;
    for (auto& c : claimed.value())
      refs.push_back({c.value().ingestion_id, c.value().claim_token});
    std::sort(refs.begin(), refs.end(),
              [](auto& a, auto& b) { return a.ingestion_id.str() < b.ingestion_id.str(); });
    return refs;
  }

  std::string column(const lease_ref& ref, const std::string& expr) {
    return db->scalar("SELECT " + expr + " FROM ingestion WHERE id = $1", {ref.ingestion_id.str()});
  }

  /// Another session of the test's schema, for holding locks.
  std::unique_ptr<pg::connection> session() {
    auto c = std::make_unique<pg::connection>(db->url());
    EXPECT_TRUE(c->ensure(true));
    return c;
  }

  std::shared_ptr<pg_repository> repo;
};

completion completing(lease_ref ref, std::string data, std::string model = "local-rules") {
  return completion{ref, completion_record{std::move(data), true, 10, 5, std::move(model)}};
}

/// Answers of asynchronous calls made from the test thread, collected by key. The callbacks share
/// the state, so that an answer arriving after a failed test has returned lands safely.
class answers {
public:
  callback<void> slot(const std::string& key) {
    return [s = state_, key](result<void> r) {
      std::lock_guard g{s->mtx};
      s->got.emplace(key, std::move(r));
      s->cv.notify_all();
    };
  }
  bool wait_for(size_t n) {
    std::unique_lock g{state_->mtx};
    return state_->cv.wait_for(g, 30s, [&] { return state_->got.size() >= n; });
  }
  result<void> at(const std::string& key) {
    std::lock_guard g{state_->mtx};
    return state_->got.at(key);
  }

private:
  struct state {
    std::mutex mtx;
    std::condition_variable cv;
    std::map<std::string, result<void>> got;
  };
  std::shared_ptr<state> state_ = std::make_shared<state>();
};

} // namespace

TEST_F(bad_values_test, completions_with_a_nul_a_cut_character_or_a_refused_value_fail_alone) {
  auto refs = held(6);
  // A value the schema refuses (as a constraint of a deployment could): the batch's data error.
  db->query("ALTER TABLE ingestion ADD CONSTRAINT test_model_check "
            "CHECK (extraction_model IS DISTINCT FROM 'refused-model')");
  auto res = await<std::vector<result<void>>>([&](auto cb) {
    repo->complete({completing(refs[0], R"({"total": 1})"),
                    // jsonb cannot hold \u0000; a text parameter cannot hold a NUL byte.
                    completing(refs[1], R"({"vendor": "ACME\u0000 GmbH"})", "local\0rules"s),
                    // A message cut to a byte count in the middle of a character.
                    completing(refs[2], R"({"note": "Betrag )" + cut_euro + R"("})",
                               "model " + cut_euro),
                    completing(refs[3], R"({"total": 3})", "refused-model"),
                    completing(refs[4], R"({"total": 4})"),
                    completing(refs[5], R"({"total": 5})")},
                   cb);
  });
  ASSERT_TRUE(res) << res.error().describe();
  ASSERT_EQ(res->size(), 6u);
  for (size_t i : {0u, 1u, 2u, 4u, 5u}) {
    EXPECT_TRUE(res->at(i)) << i << ": " << res->at(i).error().describe();
    EXPECT_EQ(column(refs[i], "status"), "completed") << i;
  }
  ASSERT_FALSE(res->at(3));
  EXPECT_TRUE(res->at(3).error().permanent());
  EXPECT_EQ(res->at(3).error().code, "pg.23514");
  EXPECT_NE(res->at(3).error().message.find("refused this item's values"), std::string::npos)
    << res->at(3).error().message;
  EXPECT_EQ(column(refs[3], "status"), "in-progress");
  // The bad values were cleaned and stored, on the ingestion and (by the trigger) the document.
  EXPECT_EQ(column(refs[1], "structured_data->>'vendor'"), "ACME GmbH");
  EXPECT_EQ(column(refs[1], "extraction_model"), "localrules");
  EXPECT_EQ(column(refs[2], "structured_data->>'note'"), "Betrag " + fffd + fffd);
  EXPECT_EQ(column(refs[2], "extraction_model"), "model " + fffd + fffd);
  EXPECT_EQ(db->scalar("SELECT d.structured_data->>'vendor' FROM document AS d "
                       "JOIN ingestion AS i ON i.document_id = d.id WHERE i.id = $1",
                       {refs[1].ingestion_id.str()}),
            "ACME GmbH");
}

TEST_F(bad_values_test, a_completion_batch_lost_to_the_connection_still_fails_as_a_whole) {
  // Not a data error: nothing is retried item by item, every caller learns it and retries later.
  pg_repository unreachable{"postgresql://ingestd@127.0.0.1:1/none?connect_timeout=2"};
  auto refs = held(2);
  auto res = await<std::vector<result<void>>>([&](auto cb) {
    unreachable.complete({completing(refs[0], "{}"), completing(refs[1], "{}")}, cb);
  });
  ASSERT_TRUE(res);
  ASSERT_EQ(res->size(), 2u);
  for (auto& r : *res) {
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().transient()) << r.error().describe();
  }
}

TEST_F(bad_values_test, failures_with_a_nul_or_a_cut_character_are_recorded) {
  auto refs = held(3);
  answers got;
  auto fail = [&](size_t i, std::string message, std::string data) {
    failure_record rec{error::make_permanent("llm.http_400", std::move(message)), 3, std::move(data)};
    repo->record_failure(refs[i], rec, 0s, [&got, i](result<failure_outcome> r) {
      got.slot(std::to_string(i))(r ? result<void>{} : result<void>{r.error()});
    });
  };
  fail(0, "bad request", R"({"total": 1})");
  fail(1, "the server said: \"" + cut_euro, R"({"vendor": "x\u0000y"})");
  fail(2, "with a NUL\0 inside"s, "");
  ASSERT_TRUE(got.wait_for(3));
  for (size_t i = 0; i < 3; ++i) {
    auto r = got.at(std::to_string(i));
    EXPECT_TRUE(r) << i << ": " << r.error().describe();
    EXPECT_EQ(column(refs[i], "status"), "failed") << i;
  }
  EXPECT_EQ(column(refs[1], "last_error"), "llm.http_400: the server said: \"" + fffd + fffd);
  EXPECT_EQ(column(refs[1], "structured_data->>'vendor'"), "xy");
  EXPECT_EQ(column(refs[2], "last_error"), "llm.http_400: with a NUL inside");
}

TEST_F(bad_values_test, a_transcription_record_the_database_refuses_fails_alone) {
  auto refs = held(6);
  // The first record is written alone while another session holds the table; the others arrive
  // meanwhile and go together in the next statement.
  auto locker = session();
  ASSERT_TRUE(locker->exec_simple("BEGIN"));
  ASSERT_TRUE(locker->exec_simple("LOCK TABLE ingestion IN ACCESS EXCLUSIVE MODE"));
  answers got;
  auto record = [&](size_t i, std::string path) {
    repo->record_transcription(refs[i], transcription_record{std::move(path), "", 0.8},
                               got.slot(std::to_string(i)));
  };
  record(0, "ingestions/0/transcription-output.json");
  record(1, "ingestions/1/transcription-output.json");
  record(2, "ingestions/2/\0.json"s); // a NUL cuts the array parameter: a malformed literal
  record(3, "ingestions/3/" + cut_euro + ".json");
  record(4, "ingestions/4/transcription-output.json");
  record(5, "ingestions/5/transcription-output.json");
  ASSERT_TRUE(locker->exec_simple("ROLLBACK"));
  ASSERT_TRUE(got.wait_for(6));
  for (size_t i : {0u, 1u, 4u, 5u}) {
    auto r = got.at(std::to_string(i));
    EXPECT_TRUE(r) << i << ": " << r.error().describe();
    EXPECT_EQ(column(refs[i], "transcription_file_path"),
              "ingestions/" + std::to_string(i) + "/transcription-output.json");
  }
  // A storage key is not cleaned (it would name another object): the record fails, alone.
  for (size_t i : {2u, 3u}) {
    auto r = got.at(std::to_string(i));
    ASSERT_FALSE(r) << i;
    EXPECT_TRUE(r.error().permanent()) << r.error().describe();
    EXPECT_EQ(column(refs[i], "transcription_file_path IS NULL"), "t");
  }
}

TEST_F(bad_values_test, the_transcription_statement_locks_its_rows_in_id_order) {
  constexpr size_t n = 32; // a statement that locked in another order would hold the highest id last by chance only
  auto refs = held(n + 1);
  auto x = refs.back(); // written first, alone
  refs.pop_back();
  // The batch and the table both hold the rows in descending id order (each update moves a row
  // version to the end of the table), so only the statement's own ordering locks in id order.
  for (auto it = refs.rbegin(); it != refs.rend(); ++it)
    db->query("UPDATE ingestion SET claimed_by = 'w2' WHERE id = $1", {it->ingestion_id.str()});
  answers got;
  auto lock_row = [this](const lease_ref& r) {
    auto c = session();
    EXPECT_TRUE(c->exec_simple("BEGIN"));
    EXPECT_TRUE(c->exec_simple("SELECT 1 FROM ingestion WHERE id = '" + r.ingestion_id.str()
                               + "' FOR UPDATE"));
    return c;
  };
  // x's record runs first and waits for x's row; the others arrive meanwhile and go together,
  // highest id first, into the next statement, which then waits for the highest id's row.
  auto hold_x = lock_row(x);
  auto hold_last = lock_row(refs.back());
  auto pid = hold_last->exec_simple("SELECT pg_backend_pid()");
  ASSERT_TRUE(pid);
  transcription_record tr{"ingestions/t/transcription-output.json", "", 0.5};
  repo->record_transcription(x, tr, got.slot("x"));
  auto waiting_for = [&](const std::string& condition, const std::vector<std::optional<std::string>>& params) {
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (db->scalar("SELECT count(*) FROM pg_stat_activity WHERE " + condition, params) == "0") {
      if (std::chrono::steady_clock::now() > deadline)
        return false;
      std::this_thread::sleep_for(5ms); // polling a condition, with a deadline
    }
    return true;
  };
  ASSERT_TRUE(waiting_for("application_name = $1 AND wait_event_type = 'Lock'", {db->name()}));
  for (auto it = refs.rbegin(); it != refs.rend(); ++it)
    repo->record_transcription(*it, tr, got.slot(it->ingestion_id.str()));
  ASSERT_TRUE(hold_x->exec_simple("ROLLBACK"));
  ASSERT_TRUE(got.wait_for(1));
  ASSERT_TRUE(waiting_for("$1::integer = ANY(pg_blocking_pids(pid))", {pid->str(0, 0)}));
  // While it waits, the batch holds every lower id: a batch that locked in its own order would
  // wait holding none of them, and two such batches over the same rows could deadlock.
  std::string lower;
  for (size_t i = 0; i + 1 < n; ++i)
    lower += (lower.empty() ? "'" : ",'") + refs[i].ingestion_id.str() + "'";
  auto probe = session();
  auto free_rows = probe->exec_simple("SELECT id FROM ingestion WHERE id IN (" + lower
                                      + ") FOR UPDATE SKIP LOCKED");
  ASSERT_TRUE(free_rows) << free_rows.error().describe();
  EXPECT_EQ(free_rows->size(), 0) << "rows of the waiting batch that it did not lock";
  ASSERT_TRUE(hold_last->exec_simple("ROLLBACK"));
  ASSERT_TRUE(got.wait_for(n + 1));
  EXPECT_TRUE(got.at("x"));
  for (auto& r : refs)
    EXPECT_TRUE(got.at(r.ingestion_id.str())) << got.at(r.ingestion_id.str()).error().describe();
}

TEST_F(bad_values_test, an_event_the_database_refuses_fails_alone) {
  auto refs = held(1);
  auto id = refs[0].ingestion_id;
  std::vector<audit_event> events{
    {id, "claim", "ok", "", 1, "w1", 0},
    {id, "extract", "permanent", "llm.http_400: \0bad"s, 2, "w1", 0},
    {id, "fetch", "transient", "s3.SlowDown: " + cut_euro, 3, "w1", 0},
    // Beyond the timestamp range: PostgreSQL refuses the value (22008).
    {id, "ack", "ok", "", 4, "w1", std::numeric_limits<int64_t>::max()},
    {id, "finish", "ok", "", 5, "w1", 0}};
  auto each = await<std::vector<result<void>>>([&](auto cb) { repo->append_events_each(events, cb); });
  ASSERT_TRUE(each) << each.error().describe();
  ASSERT_EQ(each->size(), 5u);
  for (size_t i : {0u, 1u, 2u, 4u})
    EXPECT_TRUE(each->at(i)) << i << ": " << each->at(i).error().describe();
  ASSERT_FALSE(each->at(3));
  EXPECT_TRUE(each->at(3).error().permanent());
  EXPECT_EQ(db->scalar("SELECT string_agg(step || ':' || coalesce(detail, ''), ',' ORDER BY duration_ms) "
                       "FROM ingestion_event"),
            "claim:,extract:llm.http_400: bad,fetch:s3.SlowDown: " + fffd + fffd + ",finish:");
  // The call of one caller fails when one of its events did.
  auto whole = await<void>([&](auto cb) { repo->append_events(events, cb); });
  ASSERT_FALSE(whole);
  EXPECT_TRUE(whole.error().permanent());
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion_event"), "8");
}

TEST_F(bad_values_test, batched_callers_of_append_events_fail_only_for_their_own_events) {
  auto refs = held(4);
  batching_repository batching{repo};
  // The first call is written alone while another session holds the table; the others arrive
  // meanwhile and go together in the next statement.
  auto locker = session();
  ASSERT_TRUE(locker->exec_simple("BEGIN"));
  ASSERT_TRUE(locker->exec_simple("LOCK TABLE ingestion_event IN ACCESS EXCLUSIVE MODE"));
  answers got;
  auto events_of = [&](size_t i, std::string detail, int64_t at_ms = 0) {
    auto id = refs[i].ingestion_id;
    batching.append_events({audit_event{id, "complete", "ok", "", 1, "w1", 0},
                            audit_event{id, "ack", "ok", std::move(detail), 2, "w1", at_ms}},
                           got.slot(std::to_string(i)));
  };
  events_of(0, "");
  events_of(1, "deleted \0"s + cut_euro);
  events_of(2, "", std::numeric_limits<int64_t>::max());
  events_of(3, "");
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (batching.stats().event_calls_in < 4) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(1ms); // polling a condition, with a deadline
  }
  ASSERT_TRUE(locker->exec_simple("ROLLBACK"));
  ASSERT_TRUE(got.wait_for(4));
  EXPECT_LE(batching.stats().event_calls_out, 2u);
  for (size_t i : {0u, 1u, 3u})
    EXPECT_TRUE(got.at(std::to_string(i))) << i << ": " << got.at(std::to_string(i)).error().describe();
  ASSERT_FALSE(got.at("2"));
  EXPECT_TRUE(got.at("2").error().permanent());
  // Caller 2's refused event alone is missing.
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion_event"), "7");
  EXPECT_EQ(db->scalar("SELECT detail FROM ingestion_event WHERE ingestion_id = $1 AND step = 'ack'",
                       {refs[1].ingestion_id.str()}),
            "deleted " + fffd + fffd);
}
