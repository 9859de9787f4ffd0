// The outbox port (pg_outbox_repository) on a fresh schema: take holds rows from a second relay,
// mark_sent and mark_failed, prune by retention, and a queue message's priority travels with its
// row (an SQS hand-off written by ingestd_send) to the relay; a document's events stay with the
// relay that took them however long it takes; rows that fail max_attempts times are dead, listed,
// counted, redelivered and pruned.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "adapters/db/pg_outbox_repository.hpp"
#include "tests/integration/db/work_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::work_test;

namespace {

class outbox_test : public work_test {};

} // namespace

TEST_F(outbox_test, the_outbox_holds_taken_rows_marks_them_and_prunes_sent_ones) {
  pg_outbox_repository outbox{db->url()};
  for (int i = 0; i < 3; ++i)
    db->query("INSERT INTO event_outbox (destination, body) VALUES ('q', $1)", {std::to_string(i)});
  auto first = await<std::vector<outbox_row>>([&](auto cb) { outbox.take(2, 60s, {}, cb); });
  ASSERT_TRUE(first) << first.error().describe();
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ(first->at(0).body, "0");
  // A second relay gets only the row nobody holds.
  auto second = await<std::vector<outbox_row>>([&](auto cb) { outbox.take(10, 60s, {}, cb); });
  ASSERT_TRUE(second);
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ(second->at(0).body, "2");
  ASSERT_TRUE(await<void>([&](auto cb) {
    outbox.mark_sent({first->at(0).id, first->at(1).id}, cb);
  }));
  ASSERT_TRUE(await<int64_t>(
      [&](auto cb) { outbox.mark_failed({second->at(0).id}, "queue refused", 50, cb); }));
  EXPECT_EQ(db->scalar("SELECT last_error || ' ' || attempts FROM event_outbox WHERE body = '2'"),
            "queue refused 1");
  // The failed row is free again at once; the sent ones never come back.
  auto again = await<std::vector<outbox_row>>([&](auto cb) { outbox.take(10, 60s, {}, cb); });
  ASSERT_TRUE(again);
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(again->at(0).body, "2");
  db->query("UPDATE event_outbox SET sent_at = now() - interval '2 hours' WHERE body = '0'");
  auto pruned = await<int64_t>([&](auto cb) { outbox.prune(3600s, cb); });
  ASSERT_TRUE(pruned);
  EXPECT_EQ(*pruned, 1);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM event_outbox"), "2");
}

TEST_F(outbox_test, a_hand_offs_priority_and_tenant_travel_with_its_row_to_the_relay) {
  pg_outbox_repository outbox{db->url()};
  pg_intake_repository sqs_intake{db->url(), true};
  auto urgent = intake(uuid::v4().str());
  urgent.priority = 3;
  auto later = intake(uuid::v4().str());
  later.priority = 90;
  ASSERT_TRUE(sqs_intake.create_ingestion(urgent, 30s));
  ASSERT_TRUE(sqs_intake.create_ingestion(later, 30s));
  db->query("INSERT INTO event_outbox (destination, body) VALUES ('q', 'no priority')");
  auto rows = await<std::vector<outbox_row>>([&](auto cb) { outbox.take(10, 60s, {}, cb); });
  ASSERT_TRUE(rows) << rows.error().describe();
  std::map<std::string, std::pair<std::string, int32_t>> by_body;
  for (auto& r : *rows)
    by_body[r.body] = {r.destination, r.priority};
  ASSERT_EQ(by_body.size(), 3u);
  EXPECT_EQ(by_body[urgent.ingestion_id.str()],
            (std::pair<std::string, int32_t>{test::ingest_queue, 3}));
  EXPECT_EQ(by_body[later.ingestion_id.str()],
            (std::pair<std::string, int32_t>{test::ingest_queue, 90}));
  // A row without one: the default.
  EXPECT_EQ(by_body["no priority"].second, 50);
  // The tenant travels too (SQS fair queues take it as the message group).
  for (auto& r : *rows)
    EXPECT_EQ(r.tenant, r.body == "no priority" ? "" : urgent.tenant_id.str()) << r.body;
  for (auto& r : *rows) {
    EXPECT_EQ(r.event_id, "");
    EXPECT_EQ(r.ordering_key, "");
  }
}

namespace {

int64_t add_event(test::pg_schema& db, const std::string& destination, const std::string& key,
                  const std::string& body) {
  return std::stoll(
      db.scalar("INSERT INTO event_outbox (destination, body, event_id, ordering_key) "
                "VALUES ($1, $2, gen_random_uuid(), $3) RETURNING id",
                {destination, body, key}));
}

std::vector<std::string> bodies(const std::vector<outbox_row>& rows) {
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (auto& r : rows)
    out.push_back(r.body);
  return out;
}

using strings = std::vector<std::string>;

} // namespace

TEST_F(outbox_test, a_documents_events_stay_with_one_relay_until_its_next_take_however_long) {
  const strings sinks{"events:webhook"};
  for (auto* body : {"a1", "a2", "a3"})
    add_event(*db, "events:webhook", "doc-a", body);
  add_event(*db, "events:webhook", "doc-b", "b1");
  auto one = std::make_unique<pg_outbox_repository>(db->url());
  pg_outbox_repository two{db->url()};
  auto taken = await<std::vector<outbox_row>>([&](auto cb) { one->take(10, 1s, sinks, cb); });
  ASSERT_TRUE(taken) << taken.error().describe();
  EXPECT_EQ(bodies(*taken), (strings{"a1", "a2", "a3", "b1"}));
  // The first relay sends a1 and b1 and is slow with a2: its hold runs out, the second relay
  // looks and gets nothing of either document.
  ASSERT_TRUE(await<void>([&](auto cb) {
    one->mark_sent({taken->at(0).id, taken->at(3).id}, cb);
  }));
  db->query("UPDATE event_outbox SET claimed_until = now() - interval '1 minute'");
  auto meanwhile = await<std::vector<outbox_row>>([&](auto cb) { two.take(10, 1s, sinks, cb); });
  ASSERT_TRUE(meanwhile);
  EXPECT_EQ(bodies(*meanwhile), strings{});
  // a2 fails: the first relay's next take has a2 and a3 again, in order.
  ASSERT_TRUE(await<int64_t>([&](auto cb) { one->mark_failed({taken->at(1).id}, "503", 50, cb); }));
  add_event(*db, "events:webhook", "doc-c", "c1");
  auto retry = await<std::vector<outbox_row>>([&](auto cb) { one->take(2, 1s, sinks, cb); });
  ASSERT_TRUE(retry);
  EXPECT_EQ(bodies(*retry), (strings{"a2", "a3"}));
  // A key it locked but took no row of (beyond the limit) is let go at once.
  auto other = await<std::vector<outbox_row>>([&](auto cb) { two.take(10, 1s, sinks, cb); });
  ASSERT_TRUE(other);
  EXPECT_EQ(bodies(*other), strings{"c1"});
  // A relay that is gone lets go with its connection (once its server process has ended): the
  // second relay takes the rest, in order.
  one.reset();
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (
      db->scalar("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = "
                 "1769108 AND objid = hashtext(current_schema() || ':events:webhook:doc-a')::oid")
      != "0") {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the lock outlived its session";
    std::this_thread::sleep_for(5ms); // polling a condition, with a deadline
  }
  ASSERT_TRUE(await<void>([&](auto cb) { two.mark_sent({other->at(0).id}, cb); }));
  auto rest = await<std::vector<outbox_row>>([&](auto cb) { two.take(10, 1s, sinks, cb); });
  ASSERT_TRUE(rest);
  EXPECT_EQ(bodies(*rest), (strings{"a2", "a3"}));
}

TEST_F(outbox_test, a_row_that_fails_max_attempts_times_is_dead_listed_counted_redelivered_pruned) {
  pg_outbox_repository outbox{db->url()};
  const strings sinks{"events:webhook"};
  auto d1 = add_event(*db, "events:webhook", "doc-d", "d1");
  add_event(*db, "events:webhook", "doc-d", "d2");
  db->query("INSERT INTO event_outbox (destination, body) VALUES ('q', 'message')");
  for (int attempt = 1; attempt <= 3; ++attempt) {
    auto rows = await<std::vector<outbox_row>>([&](auto cb) { outbox.take(1, 60s, sinks, cb); });
    ASSERT_TRUE(rows) << rows.error().describe();
    ASSERT_EQ(bodies(*rows), strings{"d1"}) << "attempt " << attempt;
    auto dead = await<int64_t>(
        [&](auto cb) { outbox.mark_failed({d1}, "receiver answered 500", 3, cb); });
    ASSERT_TRUE(dead);
    EXPECT_EQ(*dead, attempt == 3 ? 1 : 0);
  }
  // Dead: never taken again; the document's later event and the other rows go on.
  auto after = await<std::vector<outbox_row>>([&](auto cb) { outbox.take(10, 60s, sinks, cb); });
  ASSERT_TRUE(after);
  EXPECT_EQ(bodies(*after), (strings{"d2", "message"}));
  auto listed = await<std::vector<dead_outbox_row>>([&](auto cb) { outbox.dead_rows(10, cb); });
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->at(0).id, d1);
  EXPECT_EQ(listed->at(0).destination, "events:webhook");
  EXPECT_EQ(listed->at(0).body, "d1");
  EXPECT_EQ(listed->at(0).attempts, 3);
  EXPECT_EQ(listed->at(0).last_error, "receiver answered 500");
  EXPECT_EQ(listed->at(0).dead_at.size(), 20u) << listed->at(0).dead_at;
  // A dead row is not failed again (a relay that took it before it died).
  auto twice = await<int64_t>([&](auto cb) { outbox.mark_failed({d1}, "late", 3, cb); });
  ASSERT_TRUE(twice);
  EXPECT_EQ(*twice, 0);
  EXPECT_EQ(db->scalar("SELECT last_error FROM event_outbox WHERE id = $1", {std::to_string(d1)}),
            "receiver answered 500");

  db->query("UPDATE event_outbox SET created_at = now() - interval '90 seconds'");
  auto figures = await<outbox_figures>([&](auto cb) { outbox.figures(cb); });
  ASSERT_TRUE(figures) << figures.error().describe();
  EXPECT_EQ(figures->pending, 2);
  EXPECT_EQ(figures->dead, 1);
  EXPECT_GE(figures->oldest_pending_seconds, 90.0);
  EXPECT_LT(figures->oldest_pending_seconds, 3600.0);

  // Redelivered: taken again with its attempts reset.
  auto given = await<int64_t>([&](auto cb) { outbox.redeliver({}, cb); });
  ASSERT_TRUE(given);
  EXPECT_EQ(*given, 1);
  EXPECT_EQ(db->scalar("SELECT attempts FROM event_outbox WHERE id = $1", {std::to_string(d1)}),
            "0");
  auto again = await<std::vector<outbox_row>>([&](auto cb) { outbox.take(10, 60s, sinks, cb); });
  ASSERT_TRUE(again);
  EXPECT_EQ(bodies(*again), (strings{"d1", "d2"})); // "message" is still held
  // Dead for longer than the retention: pruned like sent rows; a recently dead one stays.
  ASSERT_TRUE(await<int64_t>([&](auto cb) { outbox.mark_failed({d1}, "again", 1, cb); }));
  auto kept = await<int64_t>([&](auto cb) { outbox.prune(3600s, cb); });
  ASSERT_TRUE(kept);
  EXPECT_EQ(*kept, 0);
  db->query(
      "UPDATE event_outbox SET dead_at = now() - interval '2 hours' WHERE dead_at IS NOT NULL");
  auto pruned = await<int64_t>([&](auto cb) { outbox.prune(3600s, cb); });
  ASSERT_TRUE(pruned);
  EXPECT_EQ(*pruned, 1);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM event_outbox WHERE id = $1", {std::to_string(d1)}),
            "0");
}
