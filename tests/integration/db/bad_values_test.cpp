// One bad value fails only its own item, and batched statements lock their rows in id order:
// failures whose message carries a NUL or a character cut in half are recorded, cleaned; kept
// output likewise; the claim and the transcription statements lock their rows in id order, so that
// two batches over the same rows wait for each other instead of deadlocking. (Completions,
// transcriptions and audit rows with bad values: ingest_repository_test.cpp and
// work_repository_test.cpp.)
#include <functional>

#include "tests/integration/db/work_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using namespace std::string_literals;
using ingestd::test::await;
using ingestd::test::work_test;
using test::cut_euro;
using test::fffd;
using test::ingest_request;

namespace {

class bad_values_test : public work_test {
protected:
  /// `n` items claimed by one call, in id order.
  std::vector<claim_ref> held(int n) {
    std::vector<claim_request> requests;
    for (auto& id : db->add_ingestions(n))
      requests.push_back(ingest_request(*uuid::parse(id)));
    std::vector<claim_ref> refs;
    for (auto& a : claim(requests, "w1", 600s))
      refs.push_back(a.work.ref());
    std::sort(refs.begin(), refs.end(),
              [](auto& a, auto& b) { return a.item.str() < b.item.str(); });
    return refs;
  }

  /// Waits (with a deadline) until a session matching `condition` exists.
  bool waiting_for(const std::string& condition,
                   const std::vector<std::optional<std::string>>& params) {
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (db->scalar("SELECT count(*) FROM pg_stat_activity WHERE " + condition, params) == "0") {
      if (std::chrono::steady_clock::now() > deadline)
        return false;
      std::this_thread::sleep_for(5ms); // polling a condition, with a deadline
    }
    return true;
  }

  /// Another session holding the row of `id` in `table`.
  std::unique_ptr<pg::connection> lock_row(const std::string& table, uuid id) {
    auto c = session();
    EXPECT_TRUE(c->exec_simple("BEGIN"));
    EXPECT_TRUE(
        c->exec_simple("SELECT 1 FROM " + table + " WHERE id = '" + id.str() + "' FOR UPDATE"));
    return c;
  }

  /// Runs `call(ref, done)` for `x` alone (it waits for x's row, held by another session), then
  /// `rest` for `refs` highest id first while x's call runs, so that they go together into the
  /// next statement, which then waits for the highest id's row (held too): while it waits, it must
  /// hold every lower id's row of `table` already. `rest` defaults to `call` for each.
  using answer_slots = test::answers<void>;
  void
  expect_id_ordered_locks(const std::string& table, std::vector<claim_ref> refs,
                          const std::function<void(const claim_ref&, callback<void>)>& call,
                          std::function<void(const std::vector<claim_ref>&, answer_slots&)> rest
                          = {}) {
    if (!rest)
      rest = [&](const std::vector<claim_ref>& descending, answer_slots& got) {
        for (auto& r : descending)
          call(r, got.slot(r.item.str()));
      };
    auto x = refs.back(); // written first, alone
    refs.pop_back();
    // The batch and the table both hold the rows in descending id order (each update moves a row
    // version to the end of the table), so only the statement's own ordering locks in id order.
    for (auto it = refs.rbegin(); it != refs.rend(); ++it) {
      db->query("UPDATE work_item SET claimed_by = claimed_by WHERE id = $1", {it->item.str()});
      db->query("UPDATE ingestion SET source_metadata = source_metadata WHERE id = $1",
                {it->item.str()});
    }
    test::answers<void> got;
    auto hold_x = lock_row(table, x.item);
    auto hold_last = lock_row(table, refs.back().item);
    auto pid = hold_last->exec_simple("SELECT pg_backend_pid()");
    ASSERT_TRUE(pid);
    call(x, got.slot("x"));
    ASSERT_TRUE(adapter_waits_for_a_lock());
    rest(std::vector<claim_ref>(refs.rbegin(), refs.rend()), got);
    ASSERT_TRUE(hold_x->exec_simple("ROLLBACK"));
    ASSERT_TRUE(got.wait_for(1));
    ASSERT_TRUE(waiting_for("$1::integer = ANY(pg_blocking_pids(pid))", {pid->str(0, 0)}));
    // While it waits, the batch holds every lower id: a batch that locked in its own order would
    // wait holding none of them, and two such batches over the same rows could deadlock.
    std::string lower;
    for (size_t i = 0; i + 1 < refs.size(); ++i)
      lower += (lower.empty() ? "'" : ",'") + refs[i].item.str() + "'";
    auto probe = session();
    auto free_rows = probe->exec_simple("SELECT id FROM " + table + " WHERE id IN (" + lower
                                        + ") FOR UPDATE SKIP LOCKED");
    ASSERT_TRUE(free_rows) << free_rows.error().describe();
    EXPECT_EQ(free_rows->size(), 0) << "rows of the waiting batch that it did not lock";
    ASSERT_TRUE(hold_last->exec_simple("ROLLBACK"));
    ASSERT_TRUE(got.wait_for(refs.size() + 1));
    EXPECT_TRUE(got.at("x")) << got.at("x").error().describe();
    for (auto& r : refs)
      EXPECT_TRUE(got.at(r.item.str())) << got.at(r.item.str()).error().describe();
  }
};

} // namespace

TEST_F(bad_values_test, failures_with_a_nul_or_a_cut_character_are_recorded_cleaned) {
  auto refs = held(3);
  test::answers<failure_outcome> got;
  auto fail_with = [&](size_t i, std::string message) {
    work->record_failure(
        refs[i], test::failure(error::make_permanent("llm.http_400", std::move(message))), 0s,
        {test::audit_row(refs[i].item, "extract", "permanent", "detail \0"s + cut_euro)},
        got.slot(std::to_string(i)));
  };
  fail_with(0, "bad request");
  fail_with(1, "the server said: \"" + cut_euro);
  fail_with(2, "with a NUL\0 inside"s);
  ASSERT_TRUE(got.wait_for(3));
  for (size_t i = 0; i < 3; ++i) {
    auto r = got.at(std::to_string(i));
    EXPECT_TRUE(r) << i << ": " << r.error().describe();
    EXPECT_EQ(item(refs[i].item, "status"), "failed") << i;
    EXPECT_EQ(db->scalar("SELECT detail FROM ingestion_event WHERE ingestion_id = $1",
                         {refs[i].item.str()}),
              std::string{"detail "}.append(fffd).append(fffd));
  }
  EXPECT_EQ(item(refs[1].item, "last_error"), "llm.http_400: the server said: \"" + fffd + fffd);
  EXPECT_EQ(item(refs[2].item, "last_error"), "llm.http_400: with a NUL inside");
  // Kept output with the same defects is stored cleaned.
  auto other = held(1).front();
  ASSERT_TRUE(await<void>([&](auto cb) {
    ingest->keep_output(other, R"({"vendor": "x\u0000y", "note": ")" + cut_euro + R"("})", cb);
  }));
  EXPECT_EQ(ingestion(other.item, "structured_data->>'vendor'"), "xy");
  EXPECT_EQ(ingestion(other.item, "structured_data->>'note'"), fffd + fffd);
}

TEST_F(bad_values_test, the_claim_statement_locks_its_rows_in_id_order) {
  // A statement that locked in another order would hold the highest id last by chance only.
  constexpr int n = 32;
  std::vector<claim_ref> refs;
  for (auto& id : db->add_ingestions(n + 1))
    refs.push_back(claim_ref{*uuid::parse(id), uuid::v7()});
  std::sort(refs.begin(), refs.end(), [](auto& a, auto& b) { return a.item.str() < b.item.str(); });
  expect_id_ordered_locks("work_item", refs, [&](const claim_ref& ref, callback<void> done) {
    work->claim({ingest_request(ref.item, ref.token)}, "w1", 60s,
                [done = std::move(done)](result<std::vector<claim_answer>> r) {
                  if (!r)
                    return done(r.error());
                  if (r->front().outcome != claim_outcome::granted)
                    return done(error::make_permanent("test.not_granted",
                                                      std::string{to_string(r->front().outcome)}));
                  done(result<void>{});
                });
  });
}

TEST_F(bad_values_test, the_transcription_statement_locks_its_rows_in_id_order) {
  transcription_record tr{"ingestions/t/transcription-output.json", "", 0.5};
  expect_id_ordered_locks("work_item", held(33), [&](const claim_ref& ref, callback<void> done) {
    ingest->record_transcription(ref, tr, std::move(done));
  });
}

TEST_F(bad_values_test, the_completion_locks_its_rows_in_id_order) {
  expect_id_ordered_locks("work_item", held(33), [&](const claim_ref& ref, callback<void> done) {
    ingest->complete({test::completing(ref)},
                     [done = std::move(done)](result<std::vector<result<void>>> r) {
                       if (!r)
                         return done(r.error());
                       done(r->front());
                     });
  });
}
