// postgres_queue's scheduling on a fresh schema: receive by priority, ageing that lets
// an old low-priority message overtake newer urgent ones, the queue's ageing rate, the
// dequeue on its index, and fair shares between tenants (migration 019).
#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
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
    auto r = create_postgres_queue(db->url(), name, "", 0, {ageing});
    EXPECT_TRUE(r) << r.error().describe();
    return std::make_unique<postgres_queue>(db->url(), name);
  }

  /// Registers the queue with fair scheduling between tenants, then opens it.
  std::unique_ptr<postgres_queue>
  make_fair(double spacing_seconds, std::vector<std::pair<std::string, double>> weights = {}) {
    postgres_queue_scheduling scheduling;
    scheduling.fair_spacing_seconds = spacing_seconds;
    scheduling.tenant_weights = std::move(weights);
    auto r = create_postgres_queue(db->url(), name, "", 0, scheduling);
    EXPECT_TRUE(r) << r.error().describe();
    return std::make_unique<postgres_queue>(db->url(), name);
  }

  /// Sends `n` messages of `tenant` in one statement, as the hand-off of a submitted directory
  /// does (ingestd_send, the function every hand-off calls).
  void send_for(const std::string& tenant, const std::string& prefix, int n,
                int32_t priority = 50) {
    db->query("SELECT count(ingestd_send($1, $2 || g, $3::integer, false, $4::uuid)) "
              "FROM generate_series(0, $5::integer - 1) AS g",
              {name, prefix, std::to_string(priority), tenant, std::to_string(n)});
  }

  /// Receives in batches of `batch`, as a node with free slots does, deleting what it got, until
  /// `enough` says stop or the queue is empty; answers the bodies in the order received.
  std::vector<std::string>
  receive_until(queue& q, int batch,
                const std::function<bool(const std::vector<std::string>&)>& enough) {
    std::vector<std::string> order;
    while (!enough(order)) {
      auto got = await<messages>([&](auto cb) { q.receive(batch, 0s, 60s, cb); });
      EXPECT_TRUE(got) << got.error().describe();
      if (!got || got->empty())
        break;
      std::vector<std::string> receipts;
      for (auto& m : *got) {
        order.push_back(m.body);
        receipts.push_back(m.receipt);
      }
      auto res = await<entries>([&](auto cb) { q.remove(receipts, cb); });
      EXPECT_TRUE(res) << res.error().describe();
    }
    return order;
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

TEST_F(pg_queue_priority_test, a_message_made_visible_again_ranks_with_the_new_ones) {
  // Given back, it waits among the messages never received by its rank: an urgent one sent
  // since goes first, a later one of its own priority after it.
  auto q = make();
  send(*q, "low-", 1, 90);
  auto m = take_one(*q);
  ASSERT_TRUE(m);
  send(*q, "urgent-", 1, 10);
  send(*q, "later-", 1, 90);
  auto res = await<entries>([&](auto cb) { q->change_visibility({{m->receipt, 0s}}, cb); });
  ASSERT_TRUE(res);
  std::vector<std::string> order;
  while (auto next = take_one(*q)) {
    order.push_back(next->body);
    finish(*q, *next);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"urgent-0", "low-0", "later-0"}));
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
  auto r = create_postgres_queue(db->url(), name, "", 0, {-1.0});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "queue.InvalidParameterValue");
}

TEST_F(pg_queue_priority_test, a_receive_walks_the_ready_and_the_held_index_in_order) {
  // The receive's two picks, as postgres_queue runs them: the messages never received by rank
  // through queue_message_ready_idx, those whose visibility ran out by visible_at through
  // queue_message_held_idx; neither sorts the queue (or walks the primary key), and neither walks
  // the messages in flight (half of them here).
  db->query("INSERT INTO queue_message (id, queue_name, body, priority, held, receipt, visible_at) "
            "SELECT gen_random_uuid(), 'q' || (g % 50), 'b', (g % 101)::smallint, g % 2 = 0, "
            "CASE WHEN g % 2 = 0 THEN gen_random_uuid() END, "
            "CASE WHEN g % 2 = 0 THEN now() + interval '1 hour' ELSE now() END "
            "FROM generate_series(1, 5000) AS g");
  db->query("ANALYZE queue_message");
  auto explain = [&](const std::string& where, const std::string& order) {
    std::string sql = "EXPLAIN SELECT id, receive_count, rank FROM queue_message WHERE "
                      "queue_name = 'q1' AND ";
    sql.append(where).append(" AND visible_at <= now() ORDER BY ").append(order);
    sql.append(" LIMIT 10 FOR UPDATE SKIP LOCKED");
    std::string text;
    for (auto& row : db->query(sql))
      text.append(row.at(0).value_or("")).append("\n");
    return text;
  };
  auto ready = explain("NOT held", "rank, id");
  EXPECT_NE(ready.find("queue_message_ready_idx"), std::string::npos) << ready;
  EXPECT_EQ(ready.find("Sort"), std::string::npos) << ready;
  auto due = explain("held", "visible_at");
  EXPECT_NE(due.find("queue_message_held_idx"), std::string::npos) << due;
  EXPECT_EQ(due.find("Sort"), std::string::npos) << due;
}

// -- Fair shares between tenants ---------------------------------------------------------------

namespace {

const std::string tenant_a = "0193a000-0000-7000-8000-00000000000a";
const std::string tenant_b = "0193a000-0000-7000-8000-00000000000b";

size_t count_prefix(const std::vector<std::string>& order, const std::string& prefix) {
  return static_cast<size_t>(std::count_if(
      order.begin(), order.end(), [&](const std::string& b) { return b.rfind(prefix, 0) == 0; }));
}

/// The 1-based position of the last body with `prefix` (0 when none).
size_t last_of(const std::vector<std::string>& order, const std::string& prefix) {
  size_t last = 0;
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i].rfind(prefix, 0) == 0)
      last = i + 1;
  return last;
}

} // namespace

TEST_F(pg_queue_priority_test, a_tenants_import_does_not_hold_another_tenants_documents_behind_it) {
  // Tenant A submits 5,000 documents, then tenant B 10. With a spacing of 60 s, A's import ranks
  // one message per minute from its send, and B's ten, sent within that minute, alternate with
  // A's first ten: B's tenth is at most the 20th message the nodes take.
  auto q = make_fair(60);
  auto t0 = std::chrono::steady_clock::now();
  send_for(tenant_a, "a-", 5000);
  send_for(tenant_b, "b-", 10);
  auto sent_in = std::chrono::steady_clock::now() - t0;
  ASSERT_LT(sent_in, 60s) << "sending took longer than the spacing; the bound below assumes less";
  auto order = receive_until(*q, 10, [](auto& o) { return count_prefix(o, "b-") == 10; });
  ASSERT_EQ(count_prefix(order, "b-"), 10u);
  std::cout << "fair shares: tenant B's 10 documents, sent after tenant A's 5,000, were all taken "
            << "by the " << last_of(order, "b-") << "th message received (sending took "
            << std::chrono::duration_cast<std::chrono::milliseconds>(sent_in).count() << " ms)\n";
  EXPECT_LE(last_of(order, "b-"), 20u);
  // A's own documents keep the order they were sent in.
  std::vector<std::string> a_order;
  for (auto& b : order)
    if (b.rfind("a-", 0) == 0)
      a_order.push_back(b);
  for (size_t i = 0; i < a_order.size(); ++i)
    EXPECT_EQ(a_order[i], "a-" + std::to_string(i));
}

TEST_F(pg_queue_priority_test, without_fair_spacing_a_tenant_waits_behind_the_import) {
  // The same scene with spacing 0: every message ranks by its send time, so B's documents come
  // after all of A's. This is what the spacing changes.
  auto q = make_fair(0);
  send_for(tenant_a, "a-", 300);
  send_for(tenant_b, "b-", 10);
  auto order = receive_until(*q, 10, [](auto& o) { return count_prefix(o, "b-") == 10; });
  ASSERT_EQ(order.size(), 310u);
  EXPECT_EQ(count_prefix({order.begin(), order.begin() + 300}, "a-"), 300u);
}

TEST_F(pg_queue_priority_test, a_tenant_of_weight_three_takes_three_shares_while_both_wait) {
  auto q = make_fair(60, {{tenant_a, 3.0}});
  send_for(tenant_a, "a-", 300);
  send_for(tenant_b, "b-", 300);
  auto order = receive_until(*q, 10, [](auto& o) { return o.size() >= 80; });
  ASSERT_EQ(order.size(), 80u);
  auto a = count_prefix(order, "a-");
  std::cout << "fair shares: of the first 80 messages, tenant A (weight 3) had " << a
            << ", tenant B (weight 1) " << 80 - a << "\n";
  EXPECT_GE(a, 59u);
  EXPECT_LE(a, 61u);
}

TEST_F(pg_queue_priority_test, priority_still_comes_before_fair_shares) {
  // A's own urgent document overtakes A's import (each priority has its own spacing), and an
  // urgent one of B overtakes both.
  auto q = make_fair(60);
  send_for(tenant_a, "a-", 200);
  send_for(tenant_a, "a-urgent-", 1, 10);
  send_for(tenant_b, "b-urgent-", 1, 5);
  auto order = receive_until(*q, 10, [](auto& o) { return !o.empty(); });
  ASSERT_GE(order.size(), 2u);
  EXPECT_EQ(order[0], "b-urgent-0");
  EXPECT_EQ(order[1], "a-urgent-0");
}

TEST_F(pg_queue_priority_test, the_ports_send_carries_the_tenant_and_refuses_a_bad_one_alone) {
  // What the relay and the benches send through the queue port takes the same fair path.
  auto q = make_fair(60);
  std::vector<outgoing_message> a;
  for (int i = 0; i < 30; ++i) {
    a.push_back({"a-" + std::to_string(i), 0s});
    a.back().tenant = tenant_a;
  }
  for (size_t at = 0; at < a.size(); at += 10) {
    std::vector<outgoing_message> batch(a.begin() + static_cast<std::ptrdiff_t>(at),
                                        a.begin() + static_cast<std::ptrdiff_t>(at + 10));
    auto res = await<entries>([&](auto cb) { q->send(batch, cb); });
    ASSERT_TRUE(res) << res.error().describe();
  }
  outgoing_message b{"b-0", 0s};
  b.tenant = tenant_b;
  outgoing_message bad{"bad", 0s};
  bad.tenant = "tenant-a";
  auto res = await<entries>([&](auto cb) { q->send({b, bad}, cb); });
  ASSERT_TRUE(res) << res.error().describe();
  ASSERT_EQ(res->size(), 2u);
  EXPECT_FALSE((*res)[0].failed);
  EXPECT_TRUE((*res)[1].failed);
  EXPECT_EQ((*res)[1].error.code, "queue.InvalidParameterValue");
  auto order = receive_until(*q, 1, [](auto& o) { return count_prefix(o, "b-") == 1; });
  EXPECT_LE(order.size(), 2u) << "B's one document goes right after A's first";
}

TEST_F(pg_queue_priority_test, a_bad_tenant_fair_spacing_is_refused) {
  postgres_queue_scheduling scheduling;
  scheduling.fair_spacing_seconds = -1;
  auto r = create_postgres_queue(db->url(), name, "", 0, scheduling);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "queue.InvalidParameterValue");
}
