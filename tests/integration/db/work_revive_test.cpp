// The sweeper's net (pg_work_repository::revive) on a fresh schema: a new message for the items of
// one stage and class that nobody holds, past due and whose message was not seen for the threshold
// and that no message of the stage's Postgres queue names (an exact anti-join: a backlog keeps its
// item; a dead letter or a message of another queue does not); on SQS message_seen_at stands in (a
// receive, a renewal, a give-back); one node at a time (an advisory lock); never a finished item.
#include "tests/integration/db/work_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::work_test;
using test::ingest_queue;
using test::ingest_request;
using test::large_queue;

namespace {

class revive_test : public work_test {
protected:
  /// Deletes the Postgres queue's messages naming `id` (a message lost without an outcome).
  void lose_message(uuid id) { db->query("DELETE FROM queue_message WHERE body = $1", {id.str()}); }

  /// The sweeper's lock of one stage and class held by another session, as another node's sweep
  /// would hold it, until the guard goes (it unlocks before it disconnects: the server releases a
  /// closed session's locks only after the client has gone on).
  class sweep_lock {
  public:
    sweep_lock(revive_test& t, const std::string& stage, const std::string& size_class)
        : conn_(t.session()),
          key_("1769104, hashtext(current_schema() || ':" + stage + ":" + size_class + "')") {
      auto held = conn_->exec_simple("SELECT pg_advisory_lock(" + key_ + ")");
      EXPECT_TRUE(held) << held.error().describe();
    }
    ~sweep_lock() {
      auto released = conn_->exec_simple("SELECT pg_advisory_unlock(" + key_ + ")");
      EXPECT_TRUE(released && released->str(0, 0) == "t");
    }

  private:
    std::unique_ptr<pg::connection> conn_;
    std::string key_;
  };

  int64_t revived(const std::string& stage = "ingest", const std::string& size_class = "",
                  const std::string& queue = ingest_queue, int limit = 100) {
    auto r = revive(stage, size_class, queue, limit);
    EXPECT_TRUE(r) << r.error().describe();
    return r ? *r : -1;
  }
};

} // namespace

TEST_F(revive_test, only_items_nobody_holds_past_due_whose_message_is_gone_get_a_new_one) {
  auto stranded1 = new_ingestion();
  auto stranded2 = new_ingestion();
  auto expired = new_ingestion();
  auto held = new_ingestion();
  auto recent = new_ingestion();
  auto done = new_ingestion();
  auto failed = new_ingestion();
  auto cancelled = new_ingestion();
  auto waiting = new_ingestion(); // its message is still in the queue
  claimed(expired);
  expire_lease(expired);
  claimed(held);
  ASSERT_TRUE(complete_ingestion(test::completing(claimed(done))));
  ASSERT_TRUE(fail(claimed(failed), error::make_permanent("x", "y")));
  ASSERT_EQ(intake_repo->cancel_ingestion(cancelled, std::nullopt, "t", 30s)->outcome,
            cancel_outcome::cancelled);
  for (auto id : {stranded1, stranded2, expired, held, recent, done, failed, cancelled})
    lose_message(id);
  long_forgotten("id <> '" + recent.str() + "'");

  // Another node sweeps the stage: nothing for us.
  {
    sweep_lock other{*this, "ingest", ""};
    EXPECT_EQ(revived(), 0);
    EXPECT_EQ(count("SELECT count(*) FROM queue_message"), 1);
  }
  EXPECT_EQ(revived(), 3);
  for (auto id : {stranded1, stranded2, expired}) {
    EXPECT_EQ(messages(id, ingest_queue), 1) << id.str();
    EXPECT_EQ(
        item(id, "due_at > now() - interval '10 s' AND message_seen_at > now() - interval '10 s'"),
        "true");
  }
  for (auto id : {held, recent, done, failed, cancelled})
    EXPECT_EQ(messages(id), 0) << id.str();
  EXPECT_EQ(messages(waiting), 1);
  // The crashed claim is left as it is: the next claim counts it.
  EXPECT_EQ(item(expired, "claim_token IS NOT NULL AND attempt_count = 0"), "true");
  // Sent now: not again until the threshold passes once more, even without a message.
  for (auto id : {stranded1, stranded2, expired})
    lose_message(id);
  EXPECT_EQ(revived(), 0);
  // The limit bounds one sweep, the longest due first.
  long_forgotten("status = 'in-progress'");
  db->query("UPDATE work_item SET due_at = now() - interval '2 hours' WHERE id = $1",
            {stranded2.str()});
  EXPECT_EQ(revived("ingest", "", ingest_queue, 1), 1);
  EXPECT_EQ(messages(stranded2), 1);
  EXPECT_EQ(messages(stranded1), 0);
}

TEST_F(revive_test, only_one_of_two_concurrent_sweepers_sends_and_each_item_gets_one_message) {
  std::vector<uuid> ids;
  ids.reserve(20);
  for (int i = 0; i < 20; ++i)
    ids.push_back(new_ingestion());
  pg_work_repository other{db->url()};
  for (int round = 0; round < 5; ++round) {
    db->query("DELETE FROM queue_message");
    long_forgotten();
    std::barrier go{2};
    std::optional<result<int64_t>> a, b;
    std::thread ta{[&] {
      go.arrive_and_wait();
      a.emplace(revive("ingest", "", ingest_queue, 100));
    }};
    std::thread tb{[&] {
      go.arrive_and_wait();
      b.emplace(revive("ingest", "", ingest_queue, 100, &other));
    }};
    ta.join();
    tb.join();
    ASSERT_TRUE(*a) << a->error().describe();
    ASSERT_TRUE(*b) << b->error().describe();
    EXPECT_NE(**a == 0, **b == 0) << "round " << round;
    EXPECT_EQ(**a + **b, 20) << "round " << round;
    EXPECT_EQ(count("SELECT count(*) FROM queue_message"), 20);
    EXPECT_EQ(count("SELECT count(DISTINCT body) FROM queue_message"), 20);
  }
}

TEST_F(revive_test, a_message_on_the_stages_queue_keeps_its_item_and_a_dead_letter_does_not) {
  // A backlog: a message that waited an hour, never received.
  auto waiting = new_ingestion();
  db->query("UPDATE queue_message SET visible_at = now() - interval '2 hours', "
            "sent_at = now() - interval '2 hours' WHERE body = $1",
            {waiting.str()});
  // One whose body another client wrote in capitals with a newline: the job reads it as the id,
  // so it is not stranded either.
  auto shouted = new_ingestion();
  db->query("UPDATE queue_message SET body = ' ' || upper(body) || E'\\n' WHERE body = $1",
            {shouted.str()});
  // One whose message the redrive moved to the dead-letter queue while it was in progress, and
  // one whose only message is on another stage's queue: no worker of the stage receives them.
  auto dead_lettered = new_ingestion();
  db->query("UPDATE queue_message SET queue_name = 'ingest-q-dlq' WHERE body = $1",
            {dead_lettered.str()});
  auto elsewhere = new_ingestion();
  db->query("UPDATE queue_message SET queue_name = $2 WHERE body = $1",
            {elsewhere.str(), test::unpack_queue});
  // One whose message is gone.
  auto lost = new_ingestion();
  lose_message(lost);
  long_forgotten();
  EXPECT_EQ(revived(), 3);
  for (auto id : {lost, dead_lettered, elsewhere})
    EXPECT_EQ(messages(id, ingest_queue), 1) << id.str();
  // The dead letter stays for an operator.
  EXPECT_EQ(messages(dead_lettered, "ingest-q-dlq"), 1);
  // However long the backlog waits, every sweep leaves it alone.
  for (int sweep = 0; sweep < 3; ++sweep) {
    long_forgotten();
    EXPECT_EQ(revived(), 0) << "sweep " << sweep;
  }
  EXPECT_EQ(messages(waiting), 1);
  EXPECT_EQ(messages(shouted), 0); // its body is not the id's text: counted by the trimmed match
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE lower(btrim(body, E' \\n')) = $1",
                  {shouted.str()}),
            1);
  // Once its message is deleted without an outcome, the net catches it.
  lose_message(waiting);
  long_forgotten();
  EXPECT_EQ(revived(), 1);
  EXPECT_EQ(messages(waiting, ingest_queue), 1);
}

TEST_F(revive_test,
       on_sqs_a_message_seen_recently_keeps_its_item_and_the_new_one_is_an_outbox_row) {
  // SQS: the database cannot see the queue, so a receive, a renewal or a give-back says the
  // message is still there; the threshold outlasts any invisibility.
  pg_work_options opts;
  opts.via_outbox = true;
  pg_work_repository sqs{db->url(), opts};
  pg_intake_repository sqs_intake{db->url(), true};
  auto make = [&](int32_t priority) {
    auto r = intake(uuid::v4().str());
    r.priority = priority;
    EXPECT_TRUE(sqs_intake.create_ingestion(r, 30s));
    return r.ingestion_id;
  };
  auto received = make(50);
  auto renewed = make(50);
  auto given_back = make(50);
  auto forgotten = make(9);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message"), 0);
  EXPECT_EQ(outbox_rows(forgotten, ingest_queue), 1);
  auto tr = claim_one(ingest_request(renewed), "w1", 300s, &sqs).work.ref();
  auto tg = claim_one(ingest_request(given_back), "w1", 300s, &sqs).work.ref();
  ASSERT_EQ(claim_one(ingest_request(received), "w0", 300s, &sqs).outcome, claim_outcome::granted);
  long_forgotten();
  // A delivery of `received` while another worker holds it: not claimed, its message seen.
  EXPECT_EQ(claim_one(ingest_request(received), "w1", 300s, &sqs).outcome, claim_outcome::held);
  expire_lease(received);
  auto lost = await<std::vector<claim_ref>>([&](auto cb) { sqs.renew_leases({tr}, 60s, cb); });
  ASSERT_TRUE(lost);
  EXPECT_TRUE(lost->empty());
  expire_lease(renewed);
  ASSERT_TRUE(await<void>([&](auto cb) { sqs.release(tg, std::chrono::seconds{0}, {}, cb); }));
  db->query("UPDATE work_item SET due_at = now() - interval '1 hour'");
  auto sent = await<int64_t>([&](auto cb) {
    sqs.revive(revive_request{"ingest", "", ingest_queue, 60s, 100}, cb);
  });
  ASSERT_TRUE(sent) << sent.error().describe();
  EXPECT_EQ(*sent, 1);
  EXPECT_EQ(outbox_rows(forgotten, ingest_queue), 2);
  EXPECT_EQ(db->scalar("SELECT priority FROM event_outbox WHERE body = $1 ORDER BY id DESC LIMIT 1",
                       {forgotten.str()}),
            "9");
  EXPECT_EQ(count("SELECT count(*) FROM queue_message"), 0);
  for (auto id : {received, renewed, given_back})
    EXPECT_EQ(outbox_rows(id), 1) << id.str();
  // Revived: seen now (a message was just sent), so not again within the threshold.
  EXPECT_EQ(item(forgotten, "message_seen_at > now() - interval '10 s'"), "true");
  db->query("UPDATE work_item SET due_at = now() - interval '1 hour'");
  sent = await<int64_t>([&](auto cb) {
    sqs.revive(revive_request{"ingest", "", ingest_queue, 60s, 100}, cb);
  });
  ASSERT_TRUE(sent);
  EXPECT_EQ(*sent, 0);
}

TEST_F(revive_test, each_stage_and_class_is_revived_on_its_own_queue_with_each_items_priority) {
  auto small_req = intake(uuid::v4().str());
  small_req.priority = 5;
  ASSERT_TRUE(intake_repo->create_ingestion(small_req, 30s));
  auto small = small_req.ingestion_id;
  auto large = new_ingestion("large");
  auto container = new_ingestion("small", "unpack");
  // A document's matching, added by its ingestion's completion.
  auto ingested = new_ingestion();
  auto doc = document_of(ingested);
  ASSERT_TRUE(complete_ingestion(
      test::completing(claimed(ingested), "{}", std::pair{doc, tenant_of(ingested)})));
  db->query("DELETE FROM queue_message");
  long_forgotten();

  // Another node sweeping the small class does not keep this one from the large class.
  {
    sweep_lock other{*this, "ingest", "small"};
    EXPECT_EQ(revived("ingest", "small", ingest_queue), 0);
    EXPECT_EQ(revived("ingest", "large", large_queue), 1);
  }
  EXPECT_EQ(messages(large, large_queue), 1);
  EXPECT_EQ(revived("ingest", "small", ingest_queue), 1);
  EXPECT_EQ(db->scalar("SELECT queue_name || ' ' || priority FROM queue_message WHERE body = $1",
                       {small.str()}),
            "ingest-q 5");
  EXPECT_EQ(messages(container), 0);
  EXPECT_EQ(messages(doc), 0);
  EXPECT_EQ(revived("unpack", "", test::unpack_queue), 1);
  EXPECT_EQ(messages(container, test::unpack_queue), 1);
  EXPECT_EQ(revived("match", "", test::match_queue), 1);
  EXPECT_EQ(messages(doc, test::match_queue), 1);
  // Every class at once when the request names none.
  db->query("DELETE FROM queue_message");
  long_forgotten();
  EXPECT_EQ(revived("ingest", "", ingest_queue), 2);
}

TEST_F(revive_test, finished_items_are_never_revived) {
  auto completed = new_ingestion();
  auto failed = new_ingestion();
  auto poisoned = new_ingestion();
  auto cancelled_id = new_ingestion();
  auto skipped = new_ingestion();
  ASSERT_TRUE(complete_ingestion(test::completing(claimed(completed))));
  ASSERT_TRUE(fail(claimed(failed), error::make_transient("http_503", "busy"), 1));
  ASSERT_EQ(claim_one(ingest_request(poisoned, uuid::v7(), 1)).outcome, claim_outcome::granted);
  expire_lease(poisoned);
  ASSERT_EQ(claim_one(ingest_request(poisoned, uuid::v7(), 1)).outcome, claim_outcome::finished);
  ASSERT_TRUE(cancelled(claimed(cancelled_id)));
  db->query("INSERT INTO known_file (hash, algorithm) VALUES (md5('skipped'), 'md5')");
  db->query("UPDATE document SET content_md5 = md5('skipped') WHERE id = $1",
            {document_of(skipped).str()});
  auto skip = ingest_request(skipped);
  skip.skip_known_files = true;
  ASSERT_EQ(claim_one(skip).outcome, claim_outcome::finished);
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE status = 'in-progress'"), 0);
  db->query("DELETE FROM queue_message");
  db->query("UPDATE work_item SET due_at = now() - interval '10 days', message_seen_at = now() - "
            "interval '10 days'");
  EXPECT_EQ(revived(), 0);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message"), 0);
}
