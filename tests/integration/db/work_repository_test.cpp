// pg_work_repository on a fresh schema: every claim outcome (granted, held, finished, moved,
// unknown and another stage's), races, crash counting and poison, the crash that moves work to the
// large size class with its message, failures (retry, failed at max attempts, permanent, a move),
// give-backs, cancellation, the audit trail written with each state change, and every fenced write
// with a stale token answered claim_lost without changing anything. The heartbeat's lease renewal
// is in work_renew_test.cpp, the sweeper's revival in work_revive_test.cpp, the coalescing of
// claims and batches of many items in work_coalescing_test.cpp.
#include <limits>

#include "tests/integration/db/work_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::work_test;
using test::audit_row;
using test::ingest_request;
using test::large_queue;

namespace {

/// The small class's request of a node with size classes: a crash moves the item to the large
/// class.
claim_request small_request(uuid id, int32_t max_attempts = 3) {
  auto r = ingest_request(id, uuid::v7(), max_attempts, "small");
  r.crash_move = work_move{"large", large_queue};
  return r;
}

} // namespace

// -- the claim -------------------------------------------------------------------------------

TEST_F(work_test, a_granted_claim_answers_the_item_and_records_the_claim) {
  auto req = intake(uuid::v4().str());
  req.priority = 7;
  ASSERT_TRUE(intake_repo->create_ingestion(req, 30s));
  auto id = req.ingestion_id;
  long_forgotten();
  auto token = uuid::v7();
  auto a = claim_one(ingest_request(id, token, 3, "small"));
  ASSERT_EQ(a.outcome, claim_outcome::granted) << a.detail;
  EXPECT_EQ(a.work.item, id);
  EXPECT_EQ(a.work.token, token);
  EXPECT_EQ(a.work.document_id, req.document_id);
  EXPECT_EQ(a.work.tenant_id, req.tenant_id);
  EXPECT_EQ(a.work.attempt_count, 0);
  EXPECT_EQ(a.work.priority, 7);
  EXPECT_EQ(a.work.size_class, "small");
  EXPECT_EQ(a.work.class_attempts_base, 0);
  EXPECT_TRUE(a.work.first_claim); // nothing of an earlier attempt can exist
  EXPECT_EQ(item(id, "claim_token"), token.str());
  EXPECT_EQ(item(id, "claimed_by"), "w1");
  EXPECT_EQ(item(id, "started_at > now() - interval '10 s'"), "true");
  EXPECT_EQ(
      item(id, "lease_expires_at BETWEEN now() + interval '290 s' AND now() + interval '310 s'"),
      "true");
  // The message was seen (it was just received); the due time is left as it was.
  EXPECT_EQ(item(id, "message_seen_at > now() - interval '10 s'"), "true");
  EXPECT_EQ(item(id, "due_at < now() - interval '50 minutes'"), "true");
  EXPECT_EQ(item(id, "attempt_count || ' ' || crash_count || ' ' || status"), "0 0 in-progress");
  EXPECT_EQ(ingestion(id, "status"), "in-progress");
  // No audit row for a plain claim; the status event of the start.
  EXPECT_EQ(audit_rows(id), 0);
  EXPECT_EQ(events(id, "INGESTION_STARTED"), 1);
  EXPECT_EQ(
      db->scalar("SELECT (body::jsonb)->'payload'->>'worker_id' || ' ' || "
                 "((body::jsonb)->'payload'->>'attempt') FROM event_outbox "
                 "WHERE destination = 'events' AND (body::jsonb)->>'type' = 'INGESTION_STARTED'"),
      "w1 1");
}

TEST_F(work_test, every_claim_outcome_is_answered_in_the_order_of_the_requests) {
  auto free_item = new_ingestion();
  auto held = new_ingestion();
  auto completed = new_ingestion();
  auto failed = new_ingestion();
  auto cancelled = new_ingestion();
  auto large = new_ingestion("large");
  auto container = new_ingestion("small", "unpack");
  auto not_matched = new_ingestion();
  auto unknown = uuid::v7();
  auto holder = claimed(held, "w0");
  auto c = claimed(completed);
  ASSERT_TRUE(complete_ingestion(test::completing(c)));
  auto f = claimed(failed);
  ASSERT_TRUE(fail(f, error::make_permanent("pdf.corrupt", "not a PDF")));
  ASSERT_EQ(intake_repo->cancel_ingestion(cancelled, std::nullopt, "test", 30s)->outcome,
            cancel_outcome::cancelled);
  long_forgotten();
  auto before_held = item(held, "row_to_json(work_item)::text");
  auto before_completed = snapshot(completed);

  auto as_match = ingest_request(not_matched);
  as_match.stage = "match";
  auto duplicate = ingest_request(free_item);
  std::vector<claim_request> reqs{ingest_request(free_item),
                                  ingest_request(held),
                                  ingest_request(completed),
                                  ingest_request(failed),
                                  ingest_request(cancelled),
                                  ingest_request(large, uuid::v7(), 3, "small"),
                                  ingest_request(unknown),
                                  ingest_request(container),
                                  as_match,
                                  duplicate};
  auto got = claim(reqs, "w2");
  ASSERT_EQ(got.size(), reqs.size());
  std::vector<std::string> outcomes;
  outcomes.reserve(got.size());
  for (auto& a : got)
    outcomes.emplace_back(to_string(a.outcome));
  EXPECT_EQ(outcomes,
            (std::vector<std::string>{"granted", "held", "finished", "finished", "finished",
                                      "moved", "unknown", "unknown", "unknown", "held"}));
  EXPECT_EQ(got[0].work.token, reqs[0].token);
  EXPECT_EQ(got[0].work.item, free_item);
  // Why not: the final status, the class it moved to, and for a second request of one item in
  // the same batch, that batch.
  EXPECT_EQ(got[2].detail, "completed");
  EXPECT_EQ(got[3].detail, "failed");
  EXPECT_EQ(got[4].detail, "cancelled");
  EXPECT_EQ(got[5].detail, "large");
  EXPECT_EQ(got[9].detail, "claimed by another request of the same batch");
  // Only the granted claim changed its item: one token stored, the live lease left alone (its
  // message seen), nothing counted anywhere.
  EXPECT_EQ(item(free_item, "claim_token"), reqs[0].token.str());
  EXPECT_EQ(item(held, "claim_token || ' ' || claimed_by || ' ' || attempt_count"),
            holder.token.str() + " w0 0");
  EXPECT_EQ(item(held, "message_seen_at > now() - interval '10 s'"), "true");
  EXPECT_NE(item(held, "row_to_json(work_item)::text"), before_held);
  EXPECT_EQ(snapshot(completed), before_completed);
  EXPECT_EQ(item(large, "size_class || ' ' || attempt_count || ' ' || (claim_token IS NULL)"),
            "large 0 true");
  EXPECT_EQ(item(container, "stage || ' ' || (claim_token IS NULL)"), "unpack true");
  EXPECT_EQ(item(not_matched, "stage || ' ' || (claim_token IS NULL)"), "ingest true");
  EXPECT_EQ(
      count("SELECT count(*) FROM work_item WHERE attempt_count > 0 AND status = 'in-progress'"),
      0);
  EXPECT_EQ(count("SELECT count(*) FROM ingestion_event WHERE step = 'claim'"), 0);
}

TEST_F(work_test, an_item_that_ends_while_the_claim_waits_for_it_is_finished) {
  auto ending = new_ingestion();
  auto other = new_ingestion();
  // Another session holds the item's row while the claim starts, and ends it before letting go:
  // the claim found it in progress, and finds it ended once it has the row.
  constexpr pg::statement hold{"test_hold", "SELECT 1 FROM work_item WHERE id = $1 FOR UPDATE"};
  constexpr pg::statement end{"test_end",
                              "UPDATE work_item SET status = 'completed' WHERE id = $1"};
  auto locker = session();
  ASSERT_TRUE(locker->exec_simple("BEGIN"));
  ASSERT_TRUE(locker->exec(hold, {ending.str()}));
  std::vector<claim_answer> got;
  std::thread claimer{[&] { got = claim({ingest_request(ending), ingest_request(other)}, "w2"); }};
  ASSERT_TRUE(adapter_waits_for_a_lock());
  ASSERT_TRUE(locker->exec(end, {ending.str()}));
  ASSERT_TRUE(locker->exec_simple("COMMIT"));
  claimer.join();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].outcome, claim_outcome::finished);
  EXPECT_EQ(got[0].detail, "ended while the claim waited for it");
  EXPECT_EQ(got[1].outcome, claim_outcome::granted);
  EXPECT_EQ(item(ending, "status || ' ' || (claim_token IS NULL)"), "completed true");
}

TEST_F(work_test, an_item_of_the_claimers_class_or_any_class_without_classes_is_granted) {
  auto large = new_ingestion("large");
  EXPECT_EQ(item(large, "size_class"), "large");
  EXPECT_EQ(item(new_ingestion(), "size_class"), "small");
  auto a = claim_one(ingest_request(large, uuid::v7(), 3, "large"));
  ASSERT_EQ(a.outcome, claim_outcome::granted);
  EXPECT_EQ(a.work.size_class, "large");
  EXPECT_EQ(a.work.class_attempts_base, 0);
  // A stage without classes takes any.
  auto other = new_ingestion("large");
  auto b = claim_one(ingest_request(other));
  ASSERT_EQ(b.outcome, claim_outcome::granted);
  EXPECT_EQ(b.work.size_class, "large");
}

TEST_F(work_test, a_claim_race_has_one_winner) {
  constexpr int n = 30;
  std::vector<uuid> ids;
  ids.reserve(n);
  for (int i = 0; i < n; ++i)
    ids.push_back(new_ingestion());
  pg_work_repository other{db->url()};
  // Two workers claim every item at the same time: one in order, one in reversed order.
  std::vector<claim_request> mine, theirs;
  for (auto& id : ids)
    mine.push_back(ingest_request(id));
  for (auto it = ids.rbegin(); it != ids.rend(); ++it)
    theirs.push_back(ingest_request(*it));
  std::barrier start{2};
  std::vector<claim_answer> ra, rb;
  std::thread ta{[&] {
    start.arrive_and_wait();
    ra = claim(mine, "a", 60s);
  }};
  std::thread tb{[&] {
    start.arrive_and_wait();
    rb = claim(theirs, "b", 60s, &other);
  }};
  ta.join();
  tb.join();
  ASSERT_EQ(ra.size(), static_cast<size_t>(n));
  ASSERT_EQ(rb.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto a_won = ra[i].outcome == claim_outcome::granted;
    auto b_won = rb[n - 1 - i].outcome == claim_outcome::granted;
    EXPECT_NE(a_won, b_won) << "item " << i;
    EXPECT_EQ((a_won ? rb[n - 1 - i] : ra[i]).outcome, claim_outcome::held) << "item " << i;
    EXPECT_EQ(item(ids[i], "claimed_by"), a_won ? "a" : "b");
  }
  // And single claims racing one to one.
  for (int round = 0; round < 10; ++round) {
    auto id = new_ingestion();
    std::barrier go{2};
    claim_answer x, y;
    std::thread t1{[&] {
      go.arrive_and_wait();
      x = claim_one(ingest_request(id), "a", 60s);
    }};
    std::thread t2{[&] {
      go.arrive_and_wait();
      y = claim_one(ingest_request(id), "b", 60s, &other);
    }};
    t1.join();
    t2.join();
    EXPECT_NE(x.outcome == claim_outcome::granted, y.outcome == claim_outcome::granted)
        << "round " << round;
  }
}

// -- crashes ---------------------------------------------------------------------------------

TEST_F(work_test, an_expired_lease_is_taken_over_as_a_crash_that_counts) {
  auto id = new_ingestion();
  auto first = claimed(id, "w1");
  expire_lease(id);
  auto a = claim_one(ingest_request(id), "w2");
  ASSERT_EQ(a.outcome, claim_outcome::granted) << a.detail;
  EXPECT_NE(a.work.token, first.token);
  EXPECT_EQ(a.work.attempt_count, 1);
  EXPECT_FALSE(a.work.first_claim); // the crashed attempt may have stored its transcription
  EXPECT_EQ(item(id, "attempt_count || ' ' || crash_count || ' ' || claimed_by"), "1 1 w2");
  EXPECT_EQ(
      item(id, "last_error"),
      "worker.crash: the claim of w1 expired without an outcome or give-back (attempt 1 of 3)");
  EXPECT_EQ(item(id, "error_class IS NULL"), "true");
  // The claimer who noticed it records it in the audit trail; the stream says it is retried and
  // started again.
  auto rows = db->query(
      "SELECT step, outcome, worker_id, detail FROM ingestion_event WHERE ingestion_id = $1",
      {id.str()});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], "claim");
  EXPECT_EQ(rows[0][1], "crash");
  EXPECT_EQ(rows[0][2], "w2");
  EXPECT_EQ(rows[0][3], item(id, "last_error"));
  EXPECT_EQ(events(id, "WARNING"), 1);
  EXPECT_EQ(events(id, "INGESTION_STARTED"), 2);
  // A stage without an audit trail counts the crash the same, without the row.
  auto quiet = new_ingestion();
  claimed(quiet);
  expire_lease(quiet);
  auto no_audit = ingest_request(quiet);
  no_audit.audit = false;
  ASSERT_EQ(claim_one(no_audit, "w2").outcome, claim_outcome::granted);
  EXPECT_EQ(item(quiet, "attempt_count || ' ' || crash_count"), "1 1");
  EXPECT_EQ(audit_rows(quiet), 0);
}

TEST_F(work_test, crashes_count_and_the_crash_at_max_attempts_fails_the_item_as_poison) {
  constexpr int32_t max_attempts = 3;
  auto req = intake("poison");
  ASSERT_TRUE(intake_repo->create_ingestion(req, 30s));
  auto id = req.ingestion_id;
  // Each worker that claims it dies: the lease runs out with the token still set.
  for (int32_t crashes = 0; crashes < max_attempts; ++crashes) {
    auto a = claim_one(ingest_request(id, uuid::v7(), max_attempts), "w" + std::to_string(crashes));
    ASSERT_EQ(a.outcome, claim_outcome::granted) << "crash " << crashes;
    EXPECT_EQ(a.work.attempt_count, crashes);
    expire_lease(id);
  }
  // The claim after the N-th crash fails it instead of handing it out again, and says why.
  auto poisoned = claim_one(ingest_request(id, uuid::v7(), max_attempts), "w-next");
  EXPECT_EQ(poisoned.outcome, claim_outcome::finished);
  EXPECT_EQ(poisoned.detail,
            "poison: the claim of w2 expired without an outcome or give-back (attempt 3 of 3)");
  EXPECT_EQ(item(id, "status || ' ' || error_class || ' ' || attempt_count || ' ' || crash_count"),
            "failed poison 3 3");
  EXPECT_EQ(
      item(id, "claim_token IS NULL AND lease_expires_at IS NULL AND completed_at IS NOT NULL"),
      "true");
  EXPECT_EQ(ingestion(id, "status"), "failed");
  EXPECT_EQ(document(id, "needs_human_review"), "true");
  // The audit trail says what happened and who noticed.
  auto rows = db->query("SELECT outcome, worker_id FROM ingestion_event WHERE ingestion_id = $1 "
                        "AND step = 'claim' ORDER BY id",
                        {id.str()});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][0], "crash");
  EXPECT_EQ(rows[0][1], "w1");
  EXPECT_EQ(rows[1][0], "crash");
  EXPECT_EQ(rows[2][0], "poison");
  EXPECT_EQ(rows[2][1], "w-next");
  EXPECT_EQ(events(id, "INGESTION_FAILED"), 1);
  EXPECT_EQ(
      db->scalar("SELECT (body::jsonb)->'payload'->>'error_class' FROM event_outbox "
                 "WHERE destination = 'events' AND (body::jsonb)->>'type' = 'INGESTION_FAILED'"),
      "poison");
  // Final: said once; a later claim finds it finished and counts nothing, and no revival ever
  // sends it again however old it gets.
  auto later = claim_one(ingest_request(id, uuid::v7(), max_attempts), "w-later");
  EXPECT_EQ(later.outcome, claim_outcome::finished);
  EXPECT_EQ(later.detail, "failed");
  EXPECT_EQ(item(id, "attempt_count"), "3");
  EXPECT_EQ(audit_rows(id, "claim"), 3);
  long_forgotten();
  auto revived = revive();
  ASSERT_TRUE(revived) << revived.error().describe();
  EXPECT_EQ(*revived, 0);
}

TEST_F(work_test, give_backs_and_recorded_outcomes_are_not_crashes) {
  // Released (shutdown, drain, work never started) as often as you like: nothing is counted.
  auto released = new_ingestion();
  for (int i = 0; i < 5; ++i) {
    auto a = claim_one(ingest_request(released, uuid::v7(), 2));
    ASSERT_EQ(a.outcome, claim_outcome::granted) << "round " << i;
    EXPECT_EQ(a.work.attempt_count, 0);
    ASSERT_TRUE(release(a.work.ref()));
    expire_lease(released); // nothing to expire: the give-back cleared the claim
  }
  EXPECT_EQ(item(released, "attempt_count || ' ' || crash_count || ' ' || status"),
            "0 0 in-progress");
  EXPECT_EQ(audit_rows(released), 0);

  // A recorded failure counts once, not again as a crash; a crash after it reaches the limit.
  auto failing = new_ingestion();
  auto f = claim_one(ingest_request(failing, uuid::v7(), 2));
  ASSERT_EQ(f.outcome, claim_outcome::granted);
  auto out = fail(f.work.ref(), error::make_transient("http_503", "unavailable"), 2, 0s);
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_FALSE(out->failed);
  auto again = claim_one(ingest_request(failing, uuid::v7(), 2));
  ASSERT_EQ(again.outcome, claim_outcome::granted);
  EXPECT_EQ(again.work.attempt_count, 1);
  expire_lease(failing);
  EXPECT_EQ(claim_one(ingest_request(failing, uuid::v7(), 2), "w2").outcome,
            claim_outcome::finished);
  EXPECT_EQ(
      item(failing, "status || ' ' || error_class || ' ' || attempt_count || ' ' || crash_count"),
      "failed poison 2 1");

  // A live claim of another worker is neither taken nor counted.
  auto held = new_ingestion();
  ASSERT_EQ(claim_one(ingest_request(held, uuid::v7(), 1)).outcome, claim_outcome::granted);
  EXPECT_EQ(claim_one(ingest_request(held, uuid::v7(), 1), "w2").outcome, claim_outcome::held);
  EXPECT_EQ(item(held, "status || ' ' || attempt_count"), "in-progress 0");
  // A completion is final, not a crash.
  auto done = new_ingestion();
  auto d = claim_one(ingest_request(done, uuid::v7(), 1));
  ASSERT_TRUE(complete_ingestion(test::completing(d.work.ref())));
  EXPECT_EQ(claim_one(ingest_request(done, uuid::v7(), 1), "w2").outcome, claim_outcome::finished);
  EXPECT_EQ(item(done, "status || ' ' || attempt_count || ' ' || (error_class IS NULL)"),
            "completed 0 true");
}

// -- size classes ----------------------------------------------------------------------------

TEST_F(work_test, a_crash_in_the_small_class_moves_the_item_to_the_large_class_with_its_message) {
  auto req = intake(uuid::v4().str());
  req.priority = 20;
  ASSERT_TRUE(intake_repo->create_ingestion(req, 30s));
  auto id = req.ingestion_id;
  ASSERT_EQ(claim_one(small_request(id)).outcome, claim_outcome::granted);
  expire_lease(id); // its holder died
  auto moved = claim_one(small_request(id), "w2");
  EXPECT_EQ(moved.outcome, claim_outcome::moved);
  EXPECT_EQ(moved.detail, "large");
  EXPECT_EQ(
      item(
          id,
          "size_class || ' ' || class_attempts_base || ' ' || attempt_count || ' ' || crash_count"),
      "large 1 1 1");
  EXPECT_EQ(item(id, "status || ' ' || (claim_token IS NULL) || ' ' || (lease_expires_at IS NULL)"),
            "in-progress true true");
  EXPECT_EQ(item(id, "due_at > now() - interval '10 s'"), "true");
  // Its message on the large class's queue, in the claim's transaction, with its priority.
  EXPECT_EQ(messages(id, large_queue), 1);
  EXPECT_EQ(db->scalar("SELECT priority FROM queue_message WHERE queue_name = $1 AND body = $2",
                       {large_queue, id.str()}),
            "20");
  EXPECT_EQ(outbox_rows(id), 0);
  auto rows
      = db->query("SELECT outcome, detail, worker_id FROM ingestion_event WHERE ingestion_id = $1 "
                  "AND step = 'claim'",
                  {id.str()});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], "moved");
  EXPECT_EQ(rows[0][1].value_or("").find("worker.crash: the claim of w1 expired"), 0u)
      << rows[0][1].value_or("");
  EXPECT_NE(rows[0][1].value_or("").find("moved to the large class"), std::string::npos);
  EXPECT_EQ(rows[0][2], "w2");
  // A stale delivery in the small class finds it moved and leaves it alone.
  EXPECT_EQ(claim_one(small_request(id), "w3").outcome, claim_outcome::moved);
  EXPECT_EQ(messages(id, large_queue), 1);

  // The large class takes it; its crashes keep counting toward the poison bound.
  auto large_request = [&] { return ingest_request(id, uuid::v7(), 3, "large"); };
  auto second = claim_one(large_request(), "big1");
  ASSERT_EQ(second.outcome, claim_outcome::granted);
  EXPECT_EQ(second.work.size_class, "large");
  EXPECT_EQ(second.work.attempt_count, 1);
  EXPECT_EQ(second.work.class_attempts_base, 1);
  expire_lease(id);
  auto third = claim_one(large_request(), "big2");
  ASSERT_EQ(third.outcome, claim_outcome::granted);
  EXPECT_EQ(third.work.attempt_count, 2);
  EXPECT_EQ(third.work.class_attempts_base, 1); // already large: the base stays
  expire_lease(id);
  auto fourth = claim_one(large_request(), "big3");
  EXPECT_EQ(fourth.outcome, claim_outcome::finished); // the third crash of three
  EXPECT_EQ(item(id, "status || ' ' || error_class"), "failed poison");
  EXPECT_EQ(messages(id, large_queue), 1);
}

TEST_F(work_test, a_crash_that_reaches_max_attempts_in_the_small_class_fails_instead_of_moving) {
  auto id = new_ingestion();
  ASSERT_EQ(claim_one(small_request(id, 1)).outcome, claim_outcome::granted);
  expire_lease(id);
  EXPECT_EQ(claim_one(small_request(id, 1)).outcome, claim_outcome::finished);
  EXPECT_EQ(item(id, "status || ' ' || error_class || ' ' || size_class"), "failed poison small");
  EXPECT_EQ(messages(id, large_queue), 0);
}

TEST_F(work_test, on_sqs_the_moved_items_message_is_an_outbox_row_with_its_priority) {
  pg_work_options opts;
  opts.via_outbox = true;
  pg_work_repository sqs{db->url(), opts};
  auto id = new_ingestion();
  ASSERT_EQ(claim_one(small_request(id), "w1", 300s, &sqs).outcome, claim_outcome::granted);
  expire_lease(id);
  EXPECT_EQ(claim_one(small_request(id), "w2", 300s, &sqs).outcome, claim_outcome::moved);
  EXPECT_EQ(messages(id, large_queue), 0);
  EXPECT_EQ(outbox_rows(id, large_queue), 1);
  EXPECT_EQ(
      db->scalar(
          "SELECT priority::text || ' ' || (sent_at IS NULL) FROM event_outbox WHERE body = $1",
          {id.str()}),
      "50 true");
}

TEST_F(work_test, a_crash_move_whose_message_cannot_be_written_changes_nothing) {
  auto id = new_ingestion();
  ASSERT_EQ(claim_one(small_request(id)).outcome, claim_outcome::granted);
  expire_lease(id);
  auto before = snapshot(id);
  // A deployment's constraint refuses the large queue's message: the move goes with it.
  db->query("ALTER TABLE queue_message ADD CONSTRAINT test_no_large CHECK (queue_name <> "
            "'ingest-large-q')");
  auto refused = await<std::vector<claim_answer>>(
      [&](auto cb) { work->claim({small_request(id)}, "w2", 300s, cb); });
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "pg.23514") << refused.error().describe();
  EXPECT_EQ(snapshot(id), before);
  EXPECT_EQ(audit_rows(id), 0);
  db->query("ALTER TABLE queue_message DROP CONSTRAINT test_no_large");
  EXPECT_EQ(claim_one(small_request(id), "w2").outcome, claim_outcome::moved);
  EXPECT_EQ(messages(id, large_queue), 1);
}

TEST_F(work_test, a_crash_without_classes_leaves_the_class_alone) {
  auto id = new_ingestion();
  claimed(id);
  expire_lease(id);
  auto again = claim_one(ingest_request(id));
  ASSERT_EQ(again.outcome, claim_outcome::granted);
  EXPECT_EQ(again.work.attempt_count, 1);
  EXPECT_EQ(again.work.size_class, "small");
  EXPECT_EQ(messages(id, large_queue), 0);
}

// -- failures --------------------------------------------------------------------------------

TEST_F(work_test, transient_failures_are_retried_after_the_delay_and_fail_at_max_attempts) {
  auto id = new_ingestion();
  for (int attempt = 1; attempt <= 3; ++attempt) {
    auto a = claim_one(ingest_request(id));
    ASSERT_EQ(a.outcome, claim_outcome::granted) << "attempt " << attempt;
    EXPECT_EQ(a.work.attempt_count, attempt - 1);
    auto final = attempt == 3;
    auto out = fail(a.work.ref(), error::make_transient("http_429", "rate limited"), 3, 300s,
                    {audit_row(id, "extract", "transient", "http_429: rate limited"),
                     audit_row(id, "record_failure", final ? "failed" : "retrying")});
    ASSERT_TRUE(out) << out.error().describe();
    EXPECT_EQ(out->attempt_count, attempt);
    EXPECT_EQ(out->failed, final);
    EXPECT_EQ(item(id, "claim_token IS NULL AND lease_expires_at IS NULL"), "true");
    EXPECT_EQ(item(id, "last_error"), "http_429: rate limited");
    EXPECT_EQ(item(id, "error_class"), "transient");
    EXPECT_EQ(item(id, "crash_count"), "0");
    EXPECT_EQ(item(id, "message_seen_at > now() - interval '10 s'"), "true");
    EXPECT_EQ(audit_rows(id, "record_failure"), attempt);
    if (!final) {
      EXPECT_EQ(item(id, "status"), "in-progress");
      EXPECT_EQ(item(id, "due_at BETWEEN now() + interval '290 s' AND now() + interval '310 s'"),
                "true");
      EXPECT_EQ(document(id, "needs_human_review"), "false");
      EXPECT_EQ(events(id, "WARNING"), attempt);
    }
  }
  EXPECT_EQ(item(id, "status"), "failed");
  EXPECT_EQ(item(id, "completed_at IS NOT NULL"), "true");
  EXPECT_EQ(ingestion(id, "status || ' ' || (completed_at IS NOT NULL)"), "failed true");
  EXPECT_EQ(document(id, "needs_human_review"), "true");
  EXPECT_EQ(events(id, "WARNING"), 2);
  EXPECT_EQ(events(id, "INGESTION_FAILED"), 1);
  EXPECT_EQ(db->scalar("SELECT string_agg(outcome, ',' ORDER BY id) FROM ingestion_event "
                       "WHERE ingestion_id = $1 AND step = 'record_failure'",
                       {id.str()}),
            "retrying,retrying,failed");
  EXPECT_EQ(claim_one(ingest_request(id)).outcome, claim_outcome::finished);
}

TEST_F(work_test, a_failure_without_a_delay_is_due_at_once) {
  auto id = new_ingestion();
  auto ref = claimed(id);
  ASSERT_TRUE(fail(ref, error::make_transient("http_503", "busy"), 3, 0s));
  EXPECT_EQ(item(id, "due_at <= now()"), "true");
  EXPECT_EQ(claim_one(ingest_request(id)).outcome, claim_outcome::granted);
}

TEST_F(work_test, a_permanent_error_fails_at_once) {
  auto id = new_ingestion();
  auto ref = claimed(id);
  auto out = fail(ref, error::make_permanent("ocr.corrupt_file", "not a PDF"), 3, 300s,
                  {audit_row(id, "record_failure", "failed")});
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_EQ(out->attempt_count, 1);
  EXPECT_TRUE(out->failed);
  EXPECT_EQ(item(id, "status || ' ' || error_class"), "failed permanent");
  EXPECT_EQ(item(id, "last_error"), "ocr.corrupt_file: not a PDF");
  EXPECT_EQ(ingestion(id, "status"), "failed");
  EXPECT_EQ(document(id, "needs_human_review"), "true");
  EXPECT_EQ(events(id, "WARNING"), 0);
  EXPECT_EQ(events(id, "INGESTION_FAILED"), 1);
  EXPECT_EQ(audit_rows(id, "record_failure"), 1);
}

TEST_F(work_test,
       a_failure_that_moves_keeps_the_item_in_progress_in_the_large_class_with_its_message) {
  auto id = new_ingestion();
  auto ref = claimed(id);
  // Neither the permanent error nor the count fails it: it moves.
  auto out
      = fail(ref, error::make_permanent("ocr.deadline", "too slow for the small class"), 1, 300s,
             {audit_row(id, "record_failure", "moved")}, work_move{"large", large_queue});
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_FALSE(out->failed);
  EXPECT_EQ(out->attempt_count, 1);
  EXPECT_EQ(
      item(id, "status || ' ' || size_class || ' ' || class_attempts_base || ' ' || attempt_count"),
      "in-progress large 1 1");
  EXPECT_EQ(item(id, "claim_token IS NULL AND due_at > now() - interval '10 s'"), "true");
  EXPECT_EQ(item(id, "last_error || ' ' || error_class"),
            "ocr.deadline: too slow for the small class permanent");
  EXPECT_EQ(ingestion(id, "status"), "in-progress");
  EXPECT_EQ(document(id, "needs_human_review"), "false");
  EXPECT_EQ(messages(id, large_queue), 1);
  EXPECT_EQ(audit_rows(id, "record_failure"), 1);
  // The large class claims it at once.
  auto a = claim_one(ingest_request(id, uuid::v7(), 3, "large"));
  ASSERT_EQ(a.outcome, claim_outcome::granted);
  EXPECT_EQ(a.work.class_attempts_base, 1);

  // On SQS the message is an outbox row.
  pg_work_options opts;
  opts.via_outbox = true;
  pg_work_repository sqs{db->url(), opts};
  auto other = new_ingestion();
  auto other_ref = claimed(other);
  auto moved = await<failure_outcome>([&](auto cb) {
    sqs.record_failure(other_ref,
                       test::failure(error::make_transient("step.timeout", "slow"), 3,
                                     work_move{"large", large_queue}),
                       0s, {}, cb);
  });
  ASSERT_TRUE(moved) << moved.error().describe();
  EXPECT_EQ(messages(other, large_queue), 0);
  EXPECT_EQ(outbox_rows(other, large_queue), 1);
}

TEST_F(work_test, a_failure_whose_message_or_audit_cannot_be_written_changes_nothing) {
  auto id = new_ingestion();
  auto ref = claimed(id);
  auto before = snapshot(id);
  db->query("ALTER TABLE queue_message ADD CONSTRAINT test_no_large CHECK (queue_name <> "
            "'ingest-large-q')");
  auto refused = fail(ref, error::make_transient("step.timeout", "slow"), 3, 0s,
                      {audit_row(id, "record_failure", "moved")}, work_move{"large", large_queue});
  ASSERT_FALSE(refused);
  EXPECT_EQ(snapshot(id), before);
  EXPECT_EQ(audit_rows(id), 0);
  // An audit row PostgreSQL refuses (a time beyond its range) fails the state change with it.
  auto bad_row = audit_row(id, "record_failure", "retrying");
  bad_row.at_ms = std::numeric_limits<int64_t>::max();
  auto refused_audit = fail(ref, error::make_transient("http_503", "busy"), 3, 0s, {bad_row});
  ASSERT_FALSE(refused_audit);
  EXPECT_TRUE(refused_audit.error().permanent()) << refused_audit.error().describe();
  EXPECT_EQ(snapshot(id), before);
  EXPECT_EQ(audit_rows(id), 0);
  // The claim still holds: the holder records its failure.
  ASSERT_TRUE(fail(ref, error::make_transient("http_503", "busy"), 3, 0s,
                   {audit_row(id, "record_failure", "retrying")}));
  EXPECT_EQ(item(id, "attempt_count"), "1");
  EXPECT_EQ(audit_rows(id), 1);
}

// -- give-backs, cancellation ------------------------------------------------------------------

TEST_F(work_test, a_release_lets_another_worker_claim_at_once_and_writes_its_audit_trail) {
  auto id = new_ingestion();
  auto ref = claimed(id);
  long_forgotten();
  ASSERT_TRUE(release(ref, {audit_row(id, "fetch", "transient", "pg.connection: gone"),
                            audit_row(id, "release", "ok", "shutdown")}));
  EXPECT_EQ(item(id, "claim_token IS NULL AND lease_expires_at IS NULL"), "true");
  EXPECT_EQ(item(id, "attempt_count || ' ' || status"), "0 in-progress");
  EXPECT_EQ(
      item(id, "due_at > now() - interval '10 s' AND message_seen_at > now() - interval '10 s'"),
      "true");
  EXPECT_EQ(
      db->scalar("SELECT string_agg(step || ':' || outcome, ',' ORDER BY id) FROM ingestion_event "
                 "WHERE ingestion_id = $1",
                 {id.str()}),
      "fetch:transient,release:ok");
  auto second = claim_one(ingest_request(id), "w2", 60s);
  EXPECT_EQ(second.outcome, claim_outcome::granted);
  EXPECT_EQ(item(id, "attempt_count"), "0");
  // Given back uncounted, but claimed before: what the first claim stored may be there.
  EXPECT_FALSE(second.work.first_claim);
  auto again = release(ref);
  ASSERT_FALSE(again);
  EXPECT_TRUE(again.error().claim_lost());
}

TEST_F(work_test, a_cancelled_job_ends_its_item_cancelled_with_its_audit_trail) {
  auto id = new_ingestion();
  auto ref = claimed(id);
  ASSERT_EQ(intake_repo->cancel_ingestion(id, std::nullopt, "op", 30s)->outcome,
            cancel_outcome::cancelling);
  auto requested = await<std::vector<uuid>>([&](auto cb) {
    work->cancel_requests({id, uuid::v7()}, cb);
  });
  ASSERT_TRUE(requested);
  EXPECT_EQ(*requested, std::vector<uuid>{id});
  ASSERT_TRUE(cancelled(ref, {audit_row(id, "cancel", "ok", "at the step boundary")}));
  EXPECT_EQ(item(id, "status || ' ' || last_error || ' ' || (claim_token IS NULL) || ' ' || "
                     "(completed_at IS NOT NULL)"),
            "cancelled cancelled true true");
  EXPECT_EQ(ingestion(id, "status"), "cancelled");
  EXPECT_EQ(events(id, "INGESTION_CANCELLED"), 1);
  EXPECT_EQ(audit_rows(id, "cancel"), 2); // the request's row and the job's
  requested = await<std::vector<uuid>>([&](auto cb) { work->cancel_requests({id}, cb); });
  ASSERT_TRUE(requested);
  EXPECT_TRUE(requested->empty());
  EXPECT_EQ(claim_one(ingest_request(id)).outcome, claim_outcome::finished);
}

// -- fencing ---------------------------------------------------------------------------------

TEST_F(work_test, every_fenced_write_with_a_stale_token_is_claim_lost_and_changes_nothing) {
  auto id = new_ingestion();
  auto stale = claimed(id, "w1");
  expire_lease(id);
  auto live = claim_one(ingest_request(id), "w2");
  ASSERT_EQ(live.outcome, claim_outcome::granted);
  auto before = snapshot(id);
  auto outbox_before = count("SELECT count(*) FROM event_outbox");
  auto audit_before = audit_rows(id);

  auto expect_lost = [&](const result<void>& r, const char* what) {
    ASSERT_FALSE(r) << what;
    EXPECT_TRUE(r.error().claim_lost()) << what << ": " << r.error().describe();
    EXPECT_EQ(snapshot(id), before) << what;
  };
  auto f = fail(stale, error::make_transient("http_503", "unavailable"));
  expect_lost(f ? result<void>{} : result<void>{f.error()}, "record_failure");
  auto moved = fail(stale, error::make_transient("step.timeout", "slow"), 3, 0s, {},
                    work_move{"large", large_queue});
  expect_lost(moved ? result<void>{} : result<void>{moved.error()}, "record_failure with a move");
  expect_lost(release(stale), "release");
  expect_lost(cancelled(stale), "record_cancelled");
  auto completed = await<std::vector<result<void>>>([&](auto cb) {
    work->complete({work_outcome{stale,
                                 {},
                                 {next_work{document_of(id), "match", document_of(id),
                                            tenant_of(id), 50, "small", test::match_queue, true}}}},
                   cb);
  });
  ASSERT_TRUE(completed);
  expect_lost(completed->at(0), "complete");
  expect_lost(complete_ingestion(test::completing(stale, R"({"total": 1})",
                                                  std::pair{document_of(id), tenant_of(id)})),
              "the ingest repository's complete");
  expect_lost(await<void>([&](auto cb) {
                ingest->record_transcription(
                    stale, transcription_record{"ingestions/x/t.json", "", 0.9}, cb);
              }),
              "record_transcription");
  expect_lost(await<void>([&](auto cb) { ingest->keep_output(stale, R"({"total": 2})", cb); }),
              "keep_output");
  auto renewed = renew({stale});
  ASSERT_TRUE(renewed);
  ASSERT_EQ(renewed->size(), 1u);
  EXPECT_EQ(renewed->front().token, stale.token);
  EXPECT_EQ(snapshot(id), before);
  // Nothing of the stale holder's reached the database: no message, no event, no next work.
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox"), outbox_before);
  EXPECT_EQ(messages(id, large_queue), 0);
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE stage = 'match'"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE queue_name = $1", {test::match_queue}),
            0);
  EXPECT_EQ(audit_rows(id), audit_before);

  // The live holder's writes go through; after its completion, its own token is stale too.
  auto ref = live.work.ref();
  ASSERT_TRUE(await<void>([&](auto cb) {
    ingest->record_transcription(ref, transcription_record{"ingestions/x/t.json", "", 0.9}, cb);
  }));
  ASSERT_TRUE(complete_ingestion(test::completing(ref)));
  EXPECT_EQ(item(id, "status"), "completed");
  before = snapshot(id);
  expect_lost(release(ref), "release after the completion");
  expect_lost(cancelled(ref), "record_cancelled after the completion");
  auto late = fail(ref, error::make_permanent("x", "y"));
  expect_lost(late ? result<void>{} : result<void>{late.error()},
              "record_failure after the completion");
  expect_lost(complete_ingestion(test::completing(ref)), "a second completion");
}

TEST_F(work_test, audit_rows_of_a_fenced_out_write_are_kept_as_history) {
  // What a worker did is history even when another took the item over: the rows it carries are
  // written though its state change is refused.
  auto id = new_ingestion();
  auto stale = claimed(id, "w1");
  expire_lease(id);
  ASSERT_EQ(claim_one(ingest_request(id), "w2").outcome, claim_outcome::granted);
  auto r = release(stale, {audit_row(id, "extract", "transient", "slow", "w1")});
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().claim_lost());
  EXPECT_EQ(
      count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND step = 'extract' "
            "AND worker_id = 'w1'",
            {id.str()}),
      1);
  EXPECT_EQ(item(id, "claimed_by || ' ' || (claim_token IS NOT NULL)"), "w2 true");
}

// -- the generic completion and the audit trail ------------------------------------------------

TEST_F(work_test,
       a_completion_batch_answers_each_item_adds_the_next_work_and_writes_the_audit_trail) {
  auto a = new_ingestion();
  auto b = new_ingestion();
  auto ra = claimed(a);
  auto rb = claimed(b);
  auto doc_a = document_of(a);
  std::vector<work_outcome> outcomes{
      work_outcome{
          ra,
          {audit_row(a, "complete")},
          {next_work{doc_a, "match", doc_a, tenant_of(a), 30, "small", test::match_queue, false}}},
      work_outcome{claim_ref{b, uuid::v7()}, {audit_row(b, "complete", "ok", "stale")}, {}},
      work_outcome{rb, {audit_row(b, "complete")}, {}, "text_unavailable: no text"}};
  auto res = await<std::vector<result<void>>>([&](auto cb) { work->complete(outcomes, cb); });
  ASSERT_TRUE(res) << res.error().describe();
  ASSERT_EQ(res->size(), 3u);
  EXPECT_TRUE(res->at(0)) << res->at(0).error().describe();
  ASSERT_FALSE(res->at(1));
  EXPECT_TRUE(res->at(1).error().claim_lost());
  EXPECT_TRUE(res->at(2)) << res->at(2).error().describe();
  EXPECT_EQ(item(a, "status || ' ' || (claim_token IS NULL) || ' ' || (completed_at IS NOT NULL)"),
            "completed true true");
  EXPECT_EQ(item(b, "status || ' ' || last_error"), "completed text_unavailable: no text");
  EXPECT_EQ(item(doc_a, "stage || ' ' || status || ' ' || priority"), "match in-progress 30");
  EXPECT_EQ(messages(doc_a, test::match_queue), 1);
  // Every outcome's rows, the fenced-out one's included.
  EXPECT_EQ(audit_rows(a), 1);
  EXPECT_EQ(audit_rows(b), 2);
  auto none = await<std::vector<result<void>>>([&](auto cb) { work->complete({}, cb); });
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(work_test, a_stale_completion_in_the_batch_of_a_live_one_adds_none_of_its_next_work) {
  // Two workers complete one item at the same moment (the first's lease ran out and the second
  // took it over): one statement, the same item under a stale and a live token. Only the live
  // outcome completes it, and only its next work is added.
  auto id = new_ingestion();
  auto stale = claimed(id, "w1");
  expire_lease(id);
  auto live = claim_one(ingest_request(id), "w2").work.ref();
  auto doc = document_of(id);
  auto other_doc = document_of(new_ingestion());
  auto next_for = [&](uuid d) {
    return next_work{d, "match", d, tenant_of(id), 50, "small", test::match_queue, true};
  };
  auto res = await<std::vector<result<void>>>([&](auto cb) {
    work->complete(
        {work_outcome{stale, {}, {next_for(other_doc)}}, work_outcome{live, {}, {next_for(doc)}}},
        cb);
  });
  ASSERT_TRUE(res) << res.error().describe();
  ASSERT_EQ(res->size(), 2u);
  ASSERT_FALSE(res->at(0));
  EXPECT_TRUE(res->at(0).error().claim_lost());
  EXPECT_TRUE(res->at(1)) << res->at(1).error().describe();
  EXPECT_EQ(messages(doc, test::match_queue), 1);
  EXPECT_EQ(messages(other_doc, test::match_queue), 0);
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE id = $1", {other_doc.str()}), 0);
}

TEST_F(work_test, audit_rows_are_appended_in_one_call_and_a_row_the_database_refuses_fails_alone) {
  auto id = new_ingestion();
  using namespace std::string_literals;
  std::vector<audit_event> events{
      {id, "claim", "ok", "", 3, "w1", 1'700'000'000'000},
      {id, "fetch", "transient", "s3.SlowDown: \"quoted\" \\ backslash", 120, "w1", 0},
      {uuid::v7(), "parse", "permanent", "unknown ingestion", 0, "", 0},
      {id, "extract", "permanent", "llm.http_400: \0bad"s, 2, "w1", 0}};
  ASSERT_TRUE(await<void>([&](auto cb) { work->append_audit(events, cb); }));
  EXPECT_EQ(count("SELECT count(*) FROM ingestion_event"), 4);
  // Stored as a row per run of one item's steps (the trail's row per write): three here.
  EXPECT_EQ(count("SELECT count(*) FROM audit_trail"), 3);
  auto rows = db->query("SELECT step, outcome, detail, duration_ms, worker_id, "
                        "floor(extract(epoch FROM at) * 1000)::bigint FROM ingestion_event "
                        "WHERE ingestion_id = $1 ORDER BY id",
                        {id.str()});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][0], "claim");
  EXPECT_EQ(rows[0][1], "ok");
  EXPECT_FALSE(rows[0][2].has_value());
  EXPECT_EQ(rows[0][3], "3");
  EXPECT_EQ(rows[0][4], "w1");
  EXPECT_EQ(rows[0][5], "1700000000000");
  EXPECT_EQ(rows[1][2], "s3.SlowDown: \"quoted\" \\ backslash");
  EXPECT_EQ(rows[2][2], "llm.http_400: bad");
  ASSERT_TRUE(await<void>([&](auto cb) { work->append_audit({}, cb); }));

  // Beyond the timestamp range: PostgreSQL refuses the value (22008); the other rows are stored
  // and the call says it failed.
  db->query("DELETE FROM audit_trail");
  std::vector<audit_event> with_bad{audit_row(id, "a"), audit_row(id, "b"), audit_row(id, "c"),
                                    audit_row(id, "d")};
  with_bad[2].at_ms = std::numeric_limits<int64_t>::max();
  auto r = await<void>([&](auto cb) { work->append_audit(with_bad, cb); });
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().permanent()) << r.error().describe();
  EXPECT_EQ(db->scalar("SELECT string_agg(step, ',' ORDER BY id) FROM ingestion_event"), "a,b,d");
}

// -- connections -----------------------------------------------------------------------------

TEST_F(work_test, the_repository_survives_a_terminated_backend) {
  auto id = new_ingestion();
  auto ask
      = [&] { return await<std::vector<uuid>>([&](auto cb) { work->cancel_requests({id}, cb); }); };
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(ask());
  ASSERT_GE(db->terminate_adapter_backends(), 1);
  // The next calls reconnect and succeed, on every pool thread.
  for (int i = 0; i < 4; ++i) {
    auto res = ask();
    ASSERT_TRUE(res) << res.error().describe();
    EXPECT_TRUE(res->empty());
  }
  EXPECT_EQ(claim_one(ingest_request(id)).outcome, claim_outcome::granted);
}

TEST(work_repository_errors, an_unreachable_database_is_a_transient_error) {
  pg_work_repository repo{"postgresql://ingestd@127.0.0.1:1/none?connect_timeout=2"};
  auto res = await<std::vector<claim_answer>>(
      [&](auto cb) { repo.claim({ingest_request(uuid::v7())}, "w1", 60s, cb); });
  ASSERT_FALSE(res);
  EXPECT_TRUE(res.error().transient());
  EXPECT_EQ(res.error().code, "pg.connection");
  // While backing off, calls fail fast rather than queueing behind connect attempts.
  auto t0 = std::chrono::steady_clock::now();
  auto again = await<std::vector<uuid>>([&](auto cb) { repo.cancel_requests({uuid::v7()}, cb); });
  ASSERT_FALSE(again);
  EXPECT_TRUE(again.error().transient());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  // An empty claim answers at once, without the database.
  auto empty = await<std::vector<claim_answer>>([&](auto cb) { repo.claim({}, "w1", 60s, cb); });
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}
