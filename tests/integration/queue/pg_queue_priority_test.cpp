// postgres_queue's scheduling on a fresh schema: receive by priority, ageing that lets
// an old low-priority message overtake newer urgent ones, the queue's ageing rate, and the
// dequeue on its index.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "adapters/queue/postgres_queue.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;

namespace {

using messages = std::vector<queue_message>;
using entries = std::vector<batch_entry_result>;

class pg_queue_priority_test : public ingestd::test::postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    if (HasFatalFailure())
      return;
    name = ingestd::test::unique_name("q");
  }

  /// Registers the queue with `ageing` levels per minute, then opens it.
  std::unique_ptr<postgres_queue> make(double ageing = 1.0) {
    auto r = create_postgres_queue(db->url(), name, "", 0, ageing);
    EXPECT_TRUE(r) << r.error().describe();
    return std::make_unique<postgres_queue>(db->url(), name);
  }

  void send(queue& q, const std::string& prefix, int n, int32_t priority) {
    std::vector<outgoing_message> out;
    out.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      out.push_back({prefix + std::to_string(i), 0s, priority});
    // In batches of 10, as SQS takes them.
    for (size_t at = 0; at < out.size(); at += 10) {
      std::vector<outgoing_message> batch(
          out.begin() + static_cast<std::ptrdiff_t>(at),
          out.begin() + static_cast<std::ptrdiff_t>(std::min(out.size(), at + 10)));
      auto res = await<entries>([&](auto cb) { q.send(batch, cb); });
      ASSERT_TRUE(res) << res.error().describe();
      for (auto& e : *res)
        EXPECT_FALSE(e.failed) << e.error.describe();
    }
  }

  /// One message, as a worker with one slot takes it.
  std::optional<queue_message> take_one(queue& q) {
    auto res = await<messages>([&](auto cb) { q.receive(1, 0s, 60s, cb); });
    EXPECT_TRUE(res) << res.error().describe();
    if (!res || res->empty())
      return std::nullopt;
    return res->front();
  }

  void finish(queue& q, const queue_message& m) {
    auto res = await<entries>([&](auto cb) { q.remove({m.receipt}, cb); });
    ASSERT_TRUE(res) << res.error().describe();
  }

  /// Inserts a message as if it had been sent `minutes_ago` (the rank trigger applies).
  void insert_old(const std::string& body, int32_t priority, int minutes_ago) {
    db->query("INSERT INTO queue_message (id, queue_name, body, priority, sent_at) "
              "VALUES (gen_random_uuid(), $1, $2, $3::smallint, now() - make_interval(mins => "
              "$4::integer))",
              {name, body, std::to_string(priority), std::to_string(minutes_ago)});
  }

  std::string name;
};

} // namespace

TEST_F(pg_queue_priority_test, lower_priority_first_and_carried_in_the_message) {
  auto q = make();
  send(*q, "low-", 3, 90);
  send(*q, "mid-", 3, 50);
  send(*q, "high-", 3, 10);
  std::vector<std::string> order;
  while (auto m = take_one(*q)) {
    order.push_back(m->body);
    EXPECT_EQ(m->priority, m->body.rfind("low-", 0) == 0   ? 90
                           : m->body.rfind("mid-", 0) == 0 ? 50
                                                           : 10);
    finish(*q, *m);
  }
  // By priority (the order within one send is the ids', not the batch's).
  ASSERT_EQ(order.size(), 9u);
  auto group = [&](size_t from) {
    return std::set<std::string>(order.begin() + static_cast<std::ptrdiff_t>(from),
                                 order.begin() + static_cast<std::ptrdiff_t>(from + 3));
  };
  EXPECT_EQ(group(0), (std::set<std::string>{"high-0", "high-1", "high-2"}));
  EXPECT_EQ(group(3), (std::set<std::string>{"mid-0", "mid-1", "mid-2"}));
  EXPECT_EQ(group(6), (std::set<std::string>{"low-0", "low-1", "low-2"}));
}

TEST_F(pg_queue_priority_test, urgent_documents_overtake_a_backlog_with_one_slot_busy) {
  // One worker slot, busy; 200 priority-90 documents, then 5 priority-10 ones.
  auto q = make();
  send(*q, "busy", 1, 50);
  auto busy = take_one(*q);
  ASSERT_TRUE(busy);
  send(*q, "backlog-", 200, 90);
  send(*q, "urgent-", 5, 10);
  finish(*q, *busy);
  std::vector<std::string> order;
  while (auto m = take_one(*q)) {
    order.push_back(m->body);
    finish(*q, *m);
  }
  ASSERT_EQ(order.size(), 205u);
  size_t last_urgent = 0;
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i].rfind("urgent-", 0) == 0)
      last_urgent = i;
  // All five before any of the backlog (they are the next five the slot takes).
  EXPECT_EQ(last_urgent, 4u);
}

TEST_F(pg_queue_priority_test, a_long_wait_lets_low_priority_overtake_newer_urgent_ones) {
  auto q = make(1.0);              // one level per minute
  insert_old("old-90", 90, 120);   // effective -30 now
  insert_old("recent-90", 90, 30); // effective 60 now
  send(*q, "new-10-", 1, 10);
  send(*q, "newer-10-", 1, 10);
  std::vector<std::string> order;
  while (auto m = take_one(*q)) {
    order.push_back(m->body);
    finish(*q, *m);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"old-90", "new-10-0", "newer-10-0", "recent-90"}));
}

TEST_F(pg_queue_priority_test, no_ageing_is_strict_priority) {
  auto q = make(0.0);
  insert_old("old-90", 90, 600);
  send(*q, "new-10-", 1, 10);
  auto first = take_one(*q);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->body, "new-10-0");
}

TEST_F(pg_queue_priority_test, a_message_made_visible_again_keeps_its_place) {
  // A back-off or a give-back does not send the message to the end of its priority.
  auto q = make();
  send(*q, "a-", 3, 50);
  auto m = take_one(*q);
  ASSERT_TRUE(m);
  auto res = await<entries>([&](auto cb) { q->change_visibility({{m->receipt, 0s}}, cb); });
  ASSERT_TRUE(res);
  auto again = take_one(*q);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, m->body);
}

TEST_F(pg_queue_priority_test, a_priority_out_of_range_is_refused_alone) {
  auto q = make();
  auto res = await<entries>([&](auto cb) {
    q->send({outgoing_message{"ok", 0s, 0}, outgoing_message{"bad", 0s, 101},
             outgoing_message{"neg", 0s, -1}, outgoing_message{"ok2", 0s, 100}},
            cb);
  });
  ASSERT_TRUE(res) << res.error().describe();
  ASSERT_EQ(res->size(), 4u);
  EXPECT_FALSE((*res)[0].failed);
  EXPECT_TRUE((*res)[1].failed);
  EXPECT_EQ((*res)[1].error.code, "queue.InvalidParameterValue");
  EXPECT_TRUE((*res)[2].failed);
  EXPECT_FALSE((*res)[3].failed);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM queue_message WHERE queue_name = $1", {name}), "2");
}

TEST_F(pg_queue_priority_test, an_invalid_ageing_rate_is_refused) {
  auto r = create_postgres_queue(db->url(), name, "", 0, -1.0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "queue.InvalidParameterValue");
}

TEST_F(pg_queue_priority_test, dequeue_by_priority_uses_the_rank_index) {
  // The receive's pick, as postgres_queue runs it: it must walk queue_message_rank_idx in order
  // rather than sort the queue (or walk the primary key).
  db->query("INSERT INTO queue_message (id, queue_name, body, priority) SELECT gen_random_uuid(), "
            "'q' || (g % 50), 'b', (g % 101)::smallint FROM generate_series(1, 5000) AS g");
  db->query("ANALYZE queue_message");
  auto plan
      = db->query("EXPLAIN SELECT id, receive_count FROM queue_message WHERE queue_name = 'q1' "
                  "AND visible_at <= now() ORDER BY rank, id LIMIT 10 FOR UPDATE SKIP LOCKED");
  std::string text;
  for (auto& row : plan)
    text += row.at(0).value_or("") + "\n";
  EXPECT_NE(text.find("queue_message_rank_idx"), std::string::npos) << text;
  EXPECT_EQ(text.find("Sort"), std::string::npos) << text;
}
