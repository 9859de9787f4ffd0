// The outbox port (pg_outbox_repository) on a fresh schema: take holds rows from a second relay,
// mark_sent and mark_failed, prune by retention, and a queue message's priority travels with its
// row (an SQS hand-off written by ingestd_send) to the relay.
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
  ASSERT_TRUE(
      await<void>([&](auto cb) { outbox.mark_failed({second->at(0).id}, "queue refused", cb); }));
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

TEST_F(outbox_test, a_hand_offs_priority_travels_with_its_row_to_the_relay) {
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
  for (auto& r : *rows) {
    EXPECT_EQ(r.event_id, "");
    EXPECT_EQ(r.ordering_key, "");
  }
}
