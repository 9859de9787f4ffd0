// pg_repository on a fresh schema, continued: give-backs that are not crashes, audit events, the
// sweeper's rescue, status figures, and surviving a terminated backend or a cut connection.
#include "tests/integration/db/repository_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::repository_test;
using ingestd::test::make_completion;

TEST_F(repository_test, give_backs_and_recorded_outcomes_are_not_crashes) {
  // Released (shutdown, drain, work never started) as often as you like: nothing is counted.
  auto released = new_ingestion();
  for (int i = 0; i < 5; ++i) {
    auto token = uuid::v4();
    auto c = claim_one(released, token, nullptr, 300s, "w1", 2);
    ASSERT_TRUE(c) << "round " << i;
    EXPECT_EQ(c->attempt_count, 0);
    ASSERT_TRUE(await<void>([&](auto cb) { repo->release({released, token}, cb); }));
    expire_lease(released);  // nothing to expire: the give-back cleared the claim
  }
  EXPECT_EQ(column(released, "attempt_count"), "0");
  EXPECT_EQ(column(released, "status"), "in-progress");
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1", {released.str()}),
            "0");

  // A recorded failure counts once, not again as a crash; a crash after it reaches the limit.
  auto failing = new_ingestion();
  auto t1 = uuid::v4();
  ASSERT_TRUE(claim_one(failing, t1, nullptr, 300s, "w1", 2));
  auto f = fail({failing, t1}, error::make_transient("http_503", "unavailable"), 2, 0s);
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->failed);
  auto again = claim_one(failing, uuid::v4(), nullptr, 300s, "w1", 2);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempt_count, 1);
  expire_lease(failing);
  auto poisoned = claim_one(failing, uuid::v4(), nullptr, 300s, "w2", 2);
  ASSERT_TRUE(poisoned);
  EXPECT_TRUE(poisoned->poisoned);
  EXPECT_EQ(column(failing, "status || ' ' || error_class || ' ' || attempt_count"), "failed poison 2");

  // A live claim of another worker is neither taken nor counted.
  auto held = new_ingestion();
  ASSERT_TRUE(claim_one(held, uuid::v4(), nullptr, 300s, "w1", 1));
  EXPECT_FALSE(claim_one(held, uuid::v4(), nullptr, 300s, "w2", 1));
  EXPECT_EQ(column(held, "status || ' ' || attempt_count"), "in-progress 0");
  // A completion is final, not a crash.
  auto done = new_ingestion();
  auto td = uuid::v4();
  ASSERT_TRUE(claim_one(done, td, nullptr, 300s, "w1", 1));
  ASSERT_TRUE(await<std::vector<result<void>>>([&](auto cb) { repo->complete({make_completion({done, td})}, cb); }));
  EXPECT_FALSE(claim_one(done, uuid::v4(), nullptr, 300s, "w2", 1));
  EXPECT_EQ(column(done, "status || ' ' || attempt_count || ' ' || (error_class IS NULL)"), "completed 0 true");
}

TEST_F(repository_test, events_are_appended_in_one_call) {
  auto id = new_ingestion();
  std::vector<audit_event> events;
  events.push_back({id, "claim", "ok", "", 3, "w1", 1'700'000'000'000});
  events.push_back({id, "fetch", "transient", "s3.SlowDown: \"quoted\" \\ backslash", 120, "w1",
                    0});
  events.push_back({uuid::v7(), "parse", "permanent", "unknown ingestion", 0, "", 0});
  ASSERT_TRUE(await<void>([&](auto cb) { repo->append_events(events, cb); }));
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion_event"), "3");
  auto rows = db->query("SELECT step, outcome, detail, duration_ms, worker_id, "
                        "floor(extract(epoch FROM at) * 1000)::bigint FROM ingestion_event "
                        "WHERE ingestion_id = $1 ORDER BY id",
                        {id.str()});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][0].value(), "claim");
  EXPECT_EQ(rows[0][1].value(), "ok");
  EXPECT_FALSE(rows[0][2].has_value());
  EXPECT_EQ(rows[0][3].value(), "3");
  EXPECT_EQ(rows[0][4].value(), "w1");
  EXPECT_EQ(rows[0][5].value(), "1700000000000");
  EXPECT_EQ(rows[1][2].value(), "s3.SlowDown: \"quoted\" \\ backslash");
  ASSERT_TRUE(await<void>([&](auto cb) { repo->append_events({}, cb); }));
}

TEST_F(repository_test, rescue_stranded_finds_only_unheld_overdue_ingestions) {
  auto stranded1 = new_ingestion();
  auto stranded2 = new_ingestion();
  auto expired = new_ingestion();
  auto held = new_ingestion();
  auto recent = new_ingestion();
  auto done = new_ingestion();
  auto te = uuid::v4(), th = uuid::v4(), td = uuid::v4();
  ASSERT_TRUE(claim_one(expired, te));
  expire_lease(expired);
  ASSERT_TRUE(claim_one(held, th));
  ASSERT_TRUE(claim_one(done, td));
  ASSERT_TRUE(await<std::vector<result<void>>>(
    [&](auto cb) { repo->complete({make_completion({done, td})}, cb); }));
  long_forgotten("id <> '" + recent.str() + "'");

  // Another node holds the sweeper lock: nothing for us.
  auto lock_key = "SELECT pg_advisory_lock(1769104, hashtext($1))";
  db->query(lock_key, {db->name()});
  auto none = rescued_ids(*repo, 100);
  ASSERT_TRUE(none) << none.error().describe();
  EXPECT_TRUE(none->empty());
  db->query("SELECT pg_advisory_unlock(1769104, hashtext($1))", {db->name()});

  auto got = rescued_ids(*repo, 100);
  ASSERT_TRUE(got) << got.error().describe();
  EXPECT_EQ(std::set<uuid>(got->begin(), got->end()),
            (std::set<uuid>{stranded1, stranded2, expired}));
  EXPECT_EQ(column(stranded1, "due_at > now() - interval '10 s'"), "t");
  // Marked due now: not stranded again until the threshold passes once more.
  auto again = rescued_ids(*repo, 100);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty());
  // The limit bounds one sweep.
  long_forgotten("status = 'in-progress'");
  auto limited = rescued_ids(*repo, 2);
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->size(), 2u);
}

TEST_F(repository_test, only_one_of_two_concurrent_sweepers_gets_rows) {
  std::set<uuid> expected;
  for (int i = 0; i < 20; ++i)
    expected.insert(new_ingestion());
  pg_repository other{db->url()};
  for (int round = 0; round < 5; ++round) {
    long_forgotten("true");
    std::barrier go{2};
    std::optional<result<std::vector<uuid>>> a, b;
    std::thread ta{[&] {
      go.arrive_and_wait();
      a.emplace(rescued_ids(*repo, 100));
    }};
    std::thread tb{[&] {
      go.arrive_and_wait();
      b.emplace(rescued_ids(other, 100));
    }};
    ta.join();
    tb.join();
    ASSERT_TRUE(*a) << (*a).error().describe();
    ASSERT_TRUE(*b) << (*b).error().describe();
    EXPECT_NE((*a)->empty(), (*b)->empty()) << "round " << round;
    std::set<uuid> all((*a)->begin(), (*a)->end());
    all.insert((*b)->begin(), (*b)->end());
    EXPECT_EQ(all, expected);
    EXPECT_EQ((*a)->size() + (*b)->size(), expected.size());
  }
}

TEST_F(repository_test, rescue_stranded_leaves_ingestions_with_a_queue_message_alone) {
  // A backlog in the Postgres queue: messages that waited an hour, never received.
  auto waiting = new_ingestion();
  queue_message_for(waiting);
  // One whose message went to a dead-letter queue: not stranded either.
  auto dead_lettered = new_ingestion();
  queue_message_for(dead_lettered, "ingest-dlq");
  // One whose message is gone.
  auto lost = new_ingestion();
  long_forgotten("true");
  EXPECT_EQ(rescue(), std::vector<uuid>{lost});
  // However long the backlog waits, every sweep leaves it alone.
  for (int sweep = 0; sweep < 3; ++sweep) {
    long_forgotten("true");
    auto got = rescue();
    EXPECT_EQ(std::count(got.begin(), got.end(), waiting), 0) << "sweep " << sweep;
    EXPECT_EQ(std::count(got.begin(), got.end(), dead_lettered), 0) << "sweep " << sweep;
  }
  // Once its message is deleted without an outcome, the net catches it.
  db->query("DELETE FROM queue_message WHERE body = $1", {waiting.str()});
  long_forgotten("true");
  auto got = rescue();
  EXPECT_EQ(std::count(got.begin(), got.end(), waiting), 1);
}

TEST_F(repository_test, rescue_stranded_waits_while_the_message_was_seen_recently) {
  // SQS: the database cannot see the queue, so a receive, a renewal or a give-back says the
  // message is still there; the sweeper's threshold outlasts any invisibility.
  auto received = new_ingestion();
  auto renewed = new_ingestion();
  auto given_back = new_ingestion();
  auto forgotten = new_ingestion();
  auto tr = uuid::v4(), tg = uuid::v4();
  ASSERT_TRUE(claim_one(renewed, tr));
  ASSERT_TRUE(claim_one(given_back, tg));
  long_forgotten("true");
  db->query("UPDATE ingestion SET lease_expires_at = now() - interval '1 minute' WHERE claim_token IS NOT NULL");
  // A delivery of `received` while another worker holds it: not claimed, but its message seen.
  auto other = uuid::v4();
  db->query("UPDATE ingestion SET claim_token = $2, lease_expires_at = now() + interval '1 minute' "
            "WHERE id = $1",
            {received.str(), other.str()});
  EXPECT_FALSE(claim_one(received, uuid::v4()));
  db->query("UPDATE ingestion SET lease_expires_at = now() - interval '1 minute' WHERE id = $1",
            {received.str()});
  auto lost = await<std::vector<lease_ref>>([&](auto cb) { repo->renew_leases({{renewed, tr}}, 60s, cb); });
  ASSERT_TRUE(lost);
  EXPECT_TRUE(lost->empty());
  expire_lease(renewed);
  ASSERT_TRUE(await<void>([&](auto cb) { repo->release({given_back, tg}, cb); }));
  db->query("UPDATE ingestion SET due_at = now() - interval '1 hour'");
  EXPECT_EQ(rescue(), std::vector<uuid>{forgotten});
  // Rescued: seen now (a message was just sent), so not again within the threshold.
  EXPECT_EQ(column(forgotten, "message_seen_at > now() - interval '10 s'"), "t");
  db->query("UPDATE ingestion SET due_at = now() - interval '1 hour'");
  EXPECT_TRUE(rescue().empty());
}

TEST_F(repository_test, find_and_summarize_for_status) {
  auto ok = new_ingestion();
  auto bad = new_ingestion();
  auto busy = new_ingestion();
  (void) busy;
  auto to = uuid::v4(), tb = uuid::v4();
  ASSERT_TRUE(claim_one(ok, to));
  ASSERT_TRUE(claim_one(bad, tb));
  ASSERT_TRUE(await<std::vector<result<void>>>(
    [&](auto cb) { repo->complete({make_completion({ok, to})}, cb); }));
  ASSERT_TRUE(fail({bad, tb}, error::make_permanent("llm.context_length_exceeded", "too long")));
  db->query("UPDATE ingestion SET created_at = now() - interval '100 s' WHERE id = $1",
            {busy.str()});

  auto s = intake_repo->summarize(30s);
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(s->in_progress, 1);
  EXPECT_EQ(s->completed, 1);
  EXPECT_EQ(s->failed, 1);
  EXPECT_GE(s->oldest_in_progress_seconds, 100);
  EXPECT_LT(s->oldest_in_progress_seconds, 200);
  ASSERT_EQ(s->failures_by_error_class.size(), 1u);
  EXPECT_EQ(s->failures_by_error_class[0].first, "permanent");
  EXPECT_EQ(s->failures_by_error_class[0].second, 1);
  EXPECT_EQ(s->documents_needing_review, 1);

  auto f = intake_repo->find_ingestion(bad, 30s);
  ASSERT_TRUE(f);
  ASSERT_TRUE(*f);
  EXPECT_EQ((*f)->status, "failed");
  EXPECT_EQ((*f)->attempt_count, 1);
  EXPECT_EQ((*f)->error_class, "permanent");
  EXPECT_EQ((*f)->last_error, "llm.context_length_exceeded: too long");
  EXPECT_TRUE((*f)->needs_human_review);
  EXPECT_FALSE((*f)->claimed);
  auto g = intake_repo->find_ingestion(ok, 30s);
  ASSERT_TRUE(g && *g);
  EXPECT_EQ((*g)->document_structured_data, R"({"invoice_number": "A-1"})");
  auto missing = intake_repo->find_ingestion(uuid::v7(), 30s);
  ASSERT_TRUE(missing);
  EXPECT_FALSE(*missing);
}

TEST_F(repository_test, survives_a_terminated_backend) {
  auto id = new_ingestion();
  // The pool has connected.
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(await<std::vector<ingestion_state>>([&](auto cb) { repo->states({id}, cb); }));
  auto killed = db->terminate_adapter_backends();
  ASSERT_GE(killed, 1);
  // The next calls reconnect and succeed, on every pool thread.
  for (int i = 0; i < 4; ++i) {
    auto token = uuid::v4();
    auto res = await<std::vector<ingestion_state>>([&](auto cb) { repo->states({id}, cb); });
    ASSERT_TRUE(res) << res.error().describe();
    ASSERT_EQ(res->size(), 1u);
    EXPECT_EQ(res->front(), ingestion_state::claimable);
    (void) token;
  }
  auto token = uuid::v4();
  EXPECT_TRUE(claim_one(id, token));
  EXPECT_GE(std::stoi(db->scalar("SELECT count(*) FROM pg_stat_activity WHERE "
                                 "application_name = $1",
                                 {db->name()})),
            1);
}

TEST_F(repository_test, completion_cut_off_by_connection_loss_is_reread_not_redone) {
  auto id = new_ingestion();
  auto token = uuid::v4();
  ASSERT_TRUE(claim_one(id, token));
  // Another session holds the row so that the completion is in flight when its backend is
  // terminated (the fixture's session watches pg_stat_activity, which a transaction would freeze).
  auto holder = PQconnectdb(db->base_url().c_str());
  ASSERT_EQ(PQstatus(holder), CONNECTION_OK);
  auto run = [&](const char* sql, std::vector<const char*> params) {
    auto r = PQexecParams(holder, sql, static_cast<int>(params.size()), nullptr, params.data(),
                          nullptr, nullptr, 0);
    auto status = PQresultStatus(r);
    PQclear(r);
    return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
  };
  ASSERT_TRUE(run("SELECT set_config('search_path', $1, false)", {db->name().c_str()}));
  ASSERT_TRUE(run("BEGIN", {}));
  auto id_text = id.str();
  ASSERT_TRUE(run("SELECT 1 FROM ingestion WHERE id = $1 FOR UPDATE", {id_text.c_str()}));
  std::promise<result<std::vector<result<void>>>> promise;
  auto future = promise.get_future();
  repo->complete({make_completion({id, token})},
                 [&](result<std::vector<result<void>>> r) { promise.set_value(std::move(r)); });
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (db->scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND "
                    "wait_event_type = 'Lock'",
                    {db->name()})
         == "0") {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the completion never blocked";
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_GE(db->terminate_adapter_backends(), 1);
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
  run("ROLLBACK", {});
  PQfinish(holder);
  auto res = future.get();
  ASSERT_TRUE(res) << res.error().describe();
  ASSERT_EQ(res->size(), 1u);
  // Re-read on a new connection: not applied and still ours, so a transient error (retry safe),
  // not claim_lost.
  ASSERT_FALSE(res->at(0));
  EXPECT_TRUE(res->at(0).error().transient()) << res->at(0).error().describe();
  EXPECT_EQ(column(id, "status"), "in-progress");
  auto again = await<std::vector<result<void>>>(
    [&](auto cb) { repo->complete({make_completion({id, token})}, cb); });
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->at(0)) << again->at(0).error().describe();
  EXPECT_EQ(column(id, "status"), "completed");
}

TEST(repository_errors, unreachable_database_is_a_transient_error) {
  pg_repository repo{"postgresql://ingestd@127.0.0.1:1/none?connect_timeout=2"};
  auto res = await<std::vector<ingestion_state>>([&](auto cb) { repo.states({uuid::v4()}, cb); });
  ASSERT_FALSE(res);
  EXPECT_TRUE(res.error().transient());
  EXPECT_EQ(res.error().code, "pg.connection");
  // While backing off, calls fail fast rather than queueing behind connect attempts.
  auto t0 = std::chrono::steady_clock::now();
  auto again = await<std::vector<ingestion_state>>([&](auto cb) { repo.states({uuid::v4()}, cb); });
  ASSERT_FALSE(again);
  EXPECT_TRUE(again.error().transient());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

TEST_F(repository_test, rescue_stranded_names_each_ingestions_size_class_and_priority) {
  auto small = new_ingestion();
  auto large = new_ingestion();
  db->query("UPDATE ingestion SET size_class = 'large', priority = 10 WHERE id = $1", {large.str()});
  long_forgotten("true");
  auto got = await<std::vector<stranded_ingestion>>([&](auto cb) { repo->rescue_stranded(60s, 100, cb); });
  ASSERT_TRUE(got) << got.error().describe();
  ASSERT_EQ(got->size(), 2u);
  for (auto& s : *got) {
    if (s.id == large) {
      EXPECT_EQ(s.size_class, "large");
      EXPECT_EQ(s.priority, 10);
    } else {
      EXPECT_EQ(s.id, small);
      EXPECT_EQ(s.size_class, "small");
      EXPECT_EQ(s.priority, 50);
    }
  }
}
