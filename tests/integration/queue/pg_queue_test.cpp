// postgres_queue on a fresh schema: SQS semantics (visibility, receipts, receive counts, delays,
// DLQ redrive), concurrent consumers, long polls woken by NOTIFY, and a terminated backend.
#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "adapters/db/pg_connection.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using clock_type = std::chrono::steady_clock;

namespace {

using messages = std::vector<queue_message>;
using entries = std::vector<batch_entry_result>;

class pg_queue_test : public ingestd::test::postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    if (HasFatalFailure())
      return;
    name = ingestd::test::unique_name("q");
  }

  std::unique_ptr<postgres_queue> make(const postgres_queue_options& opts = {}) {
    return std::make_unique<postgres_queue>(db->url(), name, opts);
  }

  std::vector<std::string> send(queue& q, const std::vector<std::string>& bodies,
                                std::chrono::seconds delay = 0s) {
    std::vector<outgoing_message> out;
    out.reserve(bodies.size());
    for (const auto& b : bodies)
      out.push_back({b, delay});
    auto res = await<entries>([&](auto cb) { q.send(out, cb); });
    EXPECT_TRUE(res) << res.error().describe();
    std::vector<std::string> ids;
    for (auto& e : *res) {
      EXPECT_FALSE(e.failed) << e.error.describe();
      ids.push_back(e.ref);
    }
    return ids;
  }

  messages receive(queue& q, int max, std::chrono::seconds wait, std::chrono::seconds vis) {
    auto res = await<messages>([&](auto cb) { q.receive(max, wait, vis, cb); });
    EXPECT_TRUE(res) << res.error().describe();
    return res ? *res : messages{};
  }

  entries remove(queue& q, std::vector<std::string> receipts) {
    auto res = await<entries>([&](auto cb) { q.remove(receipts, cb); });
    EXPECT_TRUE(res) << res.error().describe();
    return res ? *res : entries{};
  }

  entries change(queue& q, std::string receipt, std::chrono::seconds timeout) {
    auto res = await<entries>([&](auto cb) { q.change_visibility({{receipt, timeout}}, cb); });
    EXPECT_TRUE(res) << res.error().describe();
    return res ? *res : entries{};
  }

  queue_stats stats(queue& q) {
    auto res = await<queue_stats>([&](auto cb) { q.stats(cb); });
    EXPECT_TRUE(res) << res.error().describe();
    return res ? *res : queue_stats{};
  }

  std::string name;
};

} // namespace

TEST_F(pg_queue_test, send_receive_delete) {
  auto q = make();
  EXPECT_EQ(q->name(), "postgres");
  auto ids = send(*q, {"a", "b", "c"});
  ASSERT_EQ(ids.size(), 3u);
  auto s = stats(*q);
  EXPECT_EQ(s.visible, 3);
  EXPECT_EQ(s.in_flight, 0);
  auto got = receive(*q, 10, 0s, 60s);
  ASSERT_EQ(got.size(), 3u);
  std::set<std::string> bodies, got_ids;
  for (auto& m : got) {
    bodies.insert(m.body);
    got_ids.insert(m.id);
    EXPECT_EQ(m.receive_count, 1);
    EXPECT_FALSE(m.receipt.empty());
    EXPECT_GT(m.sent_at_ms, 1'600'000'000'000);
  }
  EXPECT_EQ(bodies, (std::set<std::string>{"a", "b", "c"}));
  EXPECT_EQ(got_ids, std::set<std::string>(ids.begin(), ids.end()));
  s = stats(*q);
  EXPECT_EQ(s.visible, 0);
  EXPECT_EQ(s.in_flight, 3);
  db->query("UPDATE queue_message SET sent_at = now() - interval '100 s' WHERE body = 'a'");
  s = stats(*q);
  EXPECT_GE(s.oldest_age_seconds, 100);
  EXPECT_LT(s.oldest_age_seconds, 200);
  // In flight: nobody else receives them.
  EXPECT_TRUE(receive(*q, 10, 0s, 60s).empty());
  std::vector<std::string> receipts;
  for (auto& m : got)
    receipts.push_back(m.receipt);
  auto del = remove(*q, receipts);
  ASSERT_EQ(del.size(), 3u);
  for (auto& e : del)
    EXPECT_FALSE(e.failed);
  s = stats(*q);
  EXPECT_EQ(s.visible + s.in_flight + s.delayed, 0);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM queue_message"), "0");
}

TEST_F(pg_queue_test, queues_are_separate) {
  auto q = make();
  postgres_queue other{db->url(), name + "_other"};
  send(other, {"elsewhere"});
  EXPECT_TRUE(receive(*q, 10, 0s, 60s).empty());
  auto got = receive(other, 10, 0s, 60s);
  ASSERT_EQ(got.size(), 1u);
  // A receipt of another queue deletes nothing here.
  remove(*q, {got[0].receipt});
  EXPECT_EQ(stats(other).in_flight, 1);
}

TEST_F(pg_queue_test, a_receive_takes_at_most_a_hundred) {
  auto q = make();
  std::vector<std::string> bodies;
  bodies.reserve(130);
  for (int i = 0; i < 130; ++i)
    bodies.push_back("m" + std::to_string(i));
  send(*q, bodies);
  auto first = receive(*q, 500, 0s, 60s);
  ASSERT_EQ(first.size(), static_cast<size_t>(postgres_queue::max_receive));
  auto second = receive(*q, 3, 0s, 60s);
  ASSERT_EQ(second.size(), 3u);
  std::set<std::string> seen;
  for (auto& m : first)
    seen.insert(m.body);
  for (auto& m : second)
    EXPECT_FALSE(seen.contains(m.body));
  EXPECT_EQ(seen.size(), first.size());
}

TEST_F(pg_queue_test, a_body_postgresql_would_refuse_fails_alone) {
  auto q = make();
  std::vector<outgoing_message> out{{"m0", 0s},
                                    {"cut \xE2\x82", 0s},
                                    {std::string{"nul \0 inside", 12}, 0s},
                                    {"m3 \xE2\x82\xAC", 0s}};
  auto res = await<entries>([&](auto cb) { q->send(out, cb); });
  ASSERT_TRUE(res) << res.error().describe();
  ASSERT_EQ(res->size(), 4u);
  for (size_t i : {1u, 2u}) {
    EXPECT_TRUE(res->at(i).failed) << i;
    EXPECT_EQ(res->at(i).error.code, "queue.InvalidMessageContents");
  }
  EXPECT_FALSE(res->at(0).failed) << res->at(0).error.describe();
  EXPECT_FALSE(res->at(3).failed) << res->at(3).error.describe();
  auto got = receive(*q, 10, 0s, 60s);
  std::set<std::string> bodies;
  for (auto& m : got)
    bodies.insert(m.body);
  EXPECT_EQ(bodies, (std::set<std::string>{"m0", "m3 \xE2\x82\xAC"}));
}

TEST_F(pg_queue_test, concurrent_consumers_receive_every_message_once) {
  constexpr int messages_total = 400;
  constexpr int consumers = 4;
  auto producer = make();
  std::vector<std::string> bodies;
  bodies.reserve(messages_total);
  for (int i = 0; i < messages_total; ++i)
    bodies.push_back("msg-" + std::to_string(i));
  for (int i = 0; i < messages_total; i += 100)
    send(*producer, std::vector<std::string>(bodies.begin() + i, bodies.begin() + i + 100));

  std::mutex mtx;
  std::map<std::string, int> received;
  std::atomic<int> deleted{0};
  std::atomic<bool> failed{false};
  auto deadline = clock_type::now() + 60s;
  std::vector<std::thread> threads;
  threads.reserve(consumers);
  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&] {
      // Each consumer is its own adapter (its own connections), as separate nodes are.
      postgres_queue q{db->url(), name};
      while (deleted.load() < messages_total && clock_type::now() < deadline) {
        auto got = await<messages>([&](auto cb) { q.receive(10, 1s, 120s, cb); });
        if (!got) {
          failed = true;
          return;
        }
        std::vector<std::string> receipts;
        {
          std::lock_guard guard{mtx};
          for (auto& m : *got) {
            ++received[m.body];
            receipts.push_back(m.receipt);
          }
        }
        if (receipts.empty())
          continue;
        auto del = await<entries>([&](auto cb) { q.remove(receipts, cb); });
        if (!del) {
          failed = true;
          return;
        }
        deleted += static_cast<int>(receipts.size());
      }
    });
  }
  for (auto& t : threads)
    t.join();
  ASSERT_FALSE(failed);
  EXPECT_EQ(deleted.load(), messages_total);
  EXPECT_EQ(received.size(), static_cast<size_t>(messages_total));
  for (auto& [body, count] : received)
    EXPECT_EQ(count, 1) << body << " was received by more than one consumer";
  EXPECT_EQ(db->scalar("SELECT count(*) FROM queue_message"), "0");
}

TEST_F(pg_queue_test, stale_receipts_change_nothing) {
  auto q = make();
  send(*q, {"x"});
  auto first = receive(*q, 1, 0s, 60s);
  ASSERT_EQ(first.size(), 1u);
  // Make it visible again and receive it anew: the first receipt is now stale.
  auto vis = change(*q, first[0].receipt, 0s);
  ASSERT_EQ(vis.size(), 1u);
  EXPECT_FALSE(vis[0].failed) << vis[0].error.describe();
  auto second = receive(*q, 1, 0s, 60s);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].id, first[0].id);
  EXPECT_EQ(second[0].receive_count, 2);
  EXPECT_NE(second[0].receipt, first[0].receipt);

  // A delete with the stale receipt succeeds and deletes nothing.
  auto del = remove(*q, {first[0].receipt});
  ASSERT_EQ(del.size(), 1u);
  EXPECT_FALSE(del[0].failed);
  EXPECT_EQ(stats(*q).in_flight, 1);
  // A visibility change with it changes nothing, and its entry says the receipt is stale.
  auto stale = change(*q, first[0].receipt, 0s);
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_TRUE(stale[0].failed);
  EXPECT_TRUE(stale[0].error.claim_lost());
  EXPECT_EQ(stats(*q).in_flight, 1);
  EXPECT_TRUE(receive(*q, 1, 0s, 60s).empty());

  // Malformed receipts are a permanent, per-entry error.
  auto bad = remove(*q, {"not-a-receipt", second[0].receipt});
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_TRUE(bad[0].failed);
  EXPECT_TRUE(bad[0].error.permanent());
  EXPECT_FALSE(bad[1].failed);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM queue_message"), "0");
}

TEST_F(pg_queue_test, deletes_arriving_while_one_runs_go_in_one_statement_each_answered_alone) {
  auto q = make();
  constexpr int n = 120;
  std::vector<std::string> bodies;
  bodies.reserve(n);
  for (int i = 0; i < n; ++i)
    bodies.push_back("m" + std::to_string(i));
  send(*q, bodies);
  std::vector<std::string> receipts;
  while (receipts.size() < static_cast<size_t>(n)) {
    auto got = receive(*q, 10, 0s, 300s);
    ASSERT_FALSE(got.empty());
    for (auto& m : got)
      receipts.push_back(m.receipt);
  }
  // Another session holds the table: the first DELETE waits for it while every other remove()
  // arrives, so they can only go in the statement after it.
  pg::connection locker{db->url()};
  ASSERT_TRUE(locker.exec_simple("BEGIN"));
  ASSERT_TRUE(locker.exec_simple("LOCK TABLE queue_message IN ACCESS EXCLUSIVE MODE"));
  std::mutex mtx;
  std::condition_variable cv;
  std::map<std::string, entries> answers; // first receipt of the call -> its answer
  int calls = 0;
  auto part = [&](std::vector<std::string> rs) {
    auto key = rs.front();
    q->remove(std::move(rs), [&, key](result<entries> r) {
      std::lock_guard g{mtx};
      answers[key] = r ? *r : entries{};
      ++calls;
      cv.notify_all();
    });
  };
  for (auto& r : receipts)
    part({r});
  part({"not-a-receipt"});
  ASSERT_TRUE(locker.exec_simple("ROLLBACK"));
  {
    std::unique_lock g{mtx};
    ASSERT_TRUE(cv.wait_for(g, 30s, [&] { return calls == n + 1; }))
        << calls << " of " << n + 1 << " answered";
  }
  for (auto& r : receipts) {
    ASSERT_EQ(answers[r].size(), 1u);
    EXPECT_EQ(answers[r][0].ref, r);
    EXPECT_FALSE(answers[r][0].failed) << answers[r][0].error.describe();
  }
  ASSERT_EQ(answers["not-a-receipt"].size(), 1u);
  EXPECT_TRUE(answers["not-a-receipt"][0].failed);
  EXPECT_TRUE(answers["not-a-receipt"][0].error.permanent());
  EXPECT_EQ(db->scalar("SELECT count(*) FROM queue_message"), "0");
  EXPECT_LE(q->delete_statements(), 2u);
  // When idle, a delete goes at once, alone.
  send(*q, {"last"});
  auto last = receive(*q, 1, 0s, 60s);
  ASSERT_EQ(last.size(), 1u);
  auto before = q->delete_statements();
  EXPECT_FALSE(remove(*q, {last[0].receipt}).at(0).failed);
  EXPECT_EQ(q->delete_statements(), before + 1);
}

// A delete batch and a visibility batch over the same messages, on two connections, must not
// deadlock: each locks its rows in id order, so while one waits for a row it holds none after it.
TEST_F(pg_queue_test, deletes_and_visibility_changes_lock_their_rows_in_id_order) {
  auto q = make();
  send(*q, {"a", "b"});
  auto got = receive(*q, 2, 0s, 60s);
  ASSERT_EQ(got.size(), 2u);
  auto rows = db->query("SELECT id::text, receipt::text FROM queue_message ORDER BY id");
  ASSERT_EQ(rows.size(), 2u);
  auto low = *rows[0][0], high = *rows[1][0];
  auto low_receipt = *rows[0][1], high_receipt = *rows[1][1];
  auto waiting = [&] {
    return db->scalar("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                      "AND query LIKE '%queue_message%' AND pid <> pg_backend_pid()")
           == "1";
  };
  auto wait_for_waiter = [&] {
    auto deadline = clock_type::now() + 30s;
    while (!waiting() && clock_type::now() < deadline)
      std::this_thread::sleep_for(20ms);
    return waiting();
  };
  constexpr pg::statement hold{"test_queue_hold",
                               "SELECT 1 FROM queue_message WHERE id = $1::uuid FOR UPDATE"};
  constexpr pg::statement try_hold{
      "test_queue_try_hold", "SELECT 1 FROM queue_message WHERE id = $1::uuid FOR UPDATE NOWAIT"};
  for (bool deleting : {false, true}) {
    pg::connection holder{db->url()};
    ASSERT_TRUE(holder.exec_simple("BEGIN"));
    ASSERT_TRUE(holder.exec(hold, {low}));
    // The batch names the higher row first; it waits on the lower one, holding nothing else.
    auto later = std::async(std::launch::async, [&] {
      if (deleting)
        return remove(*q, {high_receipt, low_receipt});
      auto res = await<entries>([&](auto cb) {
        q->change_visibility({{high_receipt, 30s}, {low_receipt, 30s}}, cb);
      });
      EXPECT_TRUE(res);
      return res ? *res : entries{};
    });
    ASSERT_TRUE(wait_for_waiter()) << (deleting ? "delete" : "visibility");
    EXPECT_TRUE(holder.exec(try_hold, {high}))
        << (deleting ? "the delete" : "the visibility change") << " holds the higher row";
    ASSERT_TRUE(holder.exec_simple("ROLLBACK"));
    auto answers = later.get();
    ASSERT_EQ(answers.size(), 2u);
    EXPECT_FALSE(answers[0].failed) << answers[0].error.describe();
    EXPECT_FALSE(answers[1].failed) << answers[1].error.describe();
  }
  EXPECT_EQ(db->scalar("SELECT count(*) FROM queue_message"), "0");
}

TEST_F(pg_queue_test, visibility_expiry_redelivers_with_a_higher_receive_count) {
  auto q = make();
  send(*q, {"again"});
  auto first = receive(*q, 1, 0s, 1s);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].receive_count, 1);
  // The long poll wakes when the visibility timeout runs out (no notification is sent then).
  auto t0 = clock_type::now();
  auto second = receive(*q, 1, 10s, 60s);
  auto waited = clock_type::now() - t0;
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].id, first[0].id);
  EXPECT_EQ(second[0].receive_count, 2);
  EXPECT_LT(waited, 5s);
  // Extending visibility keeps it hidden.
  auto ext = change(*q, second[0].receipt, 600s);
  ASSERT_EQ(ext.size(), 1u);
  EXPECT_FALSE(ext[0].failed);
  EXPECT_EQ(db->scalar("SELECT visible_at > now() + interval '590 s' FROM queue_message"), "t");
  auto out_of_range = change(*q, second[0].receipt, 50000s);
  EXPECT_TRUE(out_of_range.at(0).failed);
  EXPECT_TRUE(out_of_range.at(0).error.permanent());
}

TEST_F(pg_queue_test, delay_is_honoured) {
  auto q = make();
  auto sent = clock_type::now();
  send(*q, {"later"}, 2s);
  EXPECT_TRUE(receive(*q, 1, 0s, 60s).empty());
  auto s = stats(*q);
  EXPECT_EQ(s.delayed, 1);
  EXPECT_EQ(s.visible, 0);
  auto got = receive(*q, 1, 10s, 60s);
  auto elapsed = clock_type::now() - sent;
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body, "later");
  EXPECT_GE(elapsed, 1800ms);
  EXPECT_LT(elapsed, 6s);
  // Out-of-range delays are refused per entry.
  auto res = await<entries>([&](auto cb) { q->send({{"x", 901s}, {"y", 0s}}, cb); });
  ASSERT_TRUE(res);
  EXPECT_TRUE(res->at(0).failed);
  EXPECT_FALSE(res->at(1).failed);
}

TEST_F(pg_queue_test, redrive_to_the_dead_letter_queue_after_max_receives) {
  postgres_queue_options opts;
  opts.max_receive_count = 2;
  auto q = make(opts);
  EXPECT_EQ(q->dead_letter_queue(), name + "-dlq");
  postgres_queue dlq{db->url(), q->dead_letter_queue()};
  send(*q, {"poison", "fine"});
  for (int round = 1; round <= 2; ++round) {
    auto got = receive(*q, 10, 0s, 60s);
    ASSERT_EQ(got.size(), 2u);
    for (auto& m : got) {
      EXPECT_EQ(m.receive_count, round);
      if (m.body == "fine" && round == 2)
        remove(*q, {m.receipt});
      else
        change(*q, m.receipt, 0s);
    }
  }
  // The third receive would exceed the maximum: the message moves to the DLQ instead.
  EXPECT_TRUE(receive(*q, 10, 0s, 60s).empty());
  EXPECT_EQ(stats(*q).visible + stats(*q).in_flight, 0);
  auto dead = receive(dlq, 10, 0s, 60s);
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].body, "poison");
  EXPECT_EQ(dead[0].receive_count, 1);
}

TEST_F(pg_queue_test, redrive_frees_batch_slots_for_live_messages) {
  postgres_queue_options opts;
  opts.max_receive_count = 1;
  opts.dead_letter_queue = name + "_dead";
  auto q = make(opts);
  send(*q, {"p1", "p2"});
  for (auto& m : receive(*q, 10, 0s, 60s))
    change(*q, m.receipt, 0s);
  send(*q, {"live"});
  auto got = receive(*q, 10, 0s, 60s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body, "live");
  postgres_queue dead{db->url(), name + "_dead"};
  EXPECT_EQ(stats(dead).visible, 2);
}

TEST_F(pg_queue_test, long_poll_returns_promptly_on_send) {
  auto consumer = make();
  // One connection, so that the receive below opens the one its sends use.
  auto producer = make({.pool_size = 1});
  // Let the consumer's listener connect first (its LISTEN is what the wake-up rides on), and the
  // producer's connection too: the time to a wake-up is measured from the send, which should not
  // include opening a connection.
  EXPECT_TRUE(receive(*consumer, 1, 0s, 60s).empty());
  EXPECT_TRUE(receive(*producer, 1, 0s, 60s).empty());
  for (int round = 0; round < 3; ++round) {
    std::promise<result<messages>> promise;
    auto future = promise.get_future();
    auto started = clock_type::now();
    consumer->receive(10, 20s, 60s, [&](result<messages> r) { promise.set_value(std::move(r)); });
    // The poll is parked: nothing to receive yet.
    ASSERT_EQ(future.wait_for(300ms), std::future_status::timeout);
    auto sent = clock_type::now();
    send(*producer, {"wake-" + std::to_string(round)});
    ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
    auto woke = clock_type::now();
    auto got = future.get();
    ASSERT_TRUE(got) << got.error().describe();
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ(got->at(0).body, "wake-" + std::to_string(round));
    EXPECT_LT(woke - sent, 1s) << "the long poll did not wake on NOTIFY";
    EXPECT_LT(woke - started, 5s);
  }
}

TEST_F(pg_queue_test, empty_long_poll_waits_out_its_time) {
  auto q = make();
  auto t0 = clock_type::now();
  EXPECT_TRUE(receive(*q, 10, 1s, 60s).empty());
  auto waited = clock_type::now() - t0;
  EXPECT_GE(waited, 950ms);
  EXPECT_LT(waited, 4s);
}

TEST_F(pg_queue_test, destruction_answers_a_parked_poll) {
  auto q = make();
  std::promise<result<messages>> promise;
  auto future = promise.get_future();
  q->receive(10, 20s, 60s, [&](result<messages> r) { promise.set_value(std::move(r)); });
  ASSERT_EQ(future.wait_for(200ms), std::future_status::timeout);
  auto t0 = clock_type::now();
  q.reset();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  EXPECT_LT(clock_type::now() - t0, 5s);
  auto got = future.get();
  ASSERT_TRUE(got);
  EXPECT_TRUE(got->empty());
}

TEST(pg_queue_errors, unreachable_database_fails_after_the_wait_not_at_once) {
  postgres_queue q{"postgresql://ingestd@127.0.0.1:1/none?connect_timeout=2", "q"};
  auto t0 = clock_type::now();
  auto res = await<messages>([&](auto cb) { q.receive(10, 2s, 60s, cb); });
  auto waited = clock_type::now() - t0;
  ASSERT_FALSE(res);
  EXPECT_TRUE(res.error().transient());
  EXPECT_EQ(res.error().code, "pg.connection");
  EXPECT_GE(waited, 1s);
  EXPECT_LT(waited, 6s);
  auto now = await<messages>([&](auto cb) { q.receive(10, 0s, 60s, cb); });
  ASSERT_FALSE(now);
  auto sent = await<entries>([&](auto cb) { q.send({{"x", 0s}}, cb); });
  ASSERT_TRUE(sent);
  EXPECT_TRUE(sent->at(0).failed);
  EXPECT_TRUE(sent->at(0).error.transient());
}

TEST_F(pg_queue_test, survives_terminated_backends) {
  auto q = make();
  send(*q, {"before"});
  EXPECT_EQ(receive(*q, 10, 0s, 60s).size(), 1u);
  ASSERT_GE(db->terminate_adapter_backends(), 1);
  send(*q, {"after"});
  auto got = receive(*q, 10, 5s, 60s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body, "after");
  // The listener reconnects too: a parked poll wakes on a later send.
  std::promise<result<messages>> promise;
  auto future = promise.get_future();
  q->receive(10, 20s, 60s, [&](result<messages> r) { promise.set_value(std::move(r)); });
  ASSERT_EQ(future.wait_for(300ms), std::future_status::timeout);
  postgres_queue producer{db->url(), name};
  send(producer, {"wake"});
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
  auto woke = future.get();
  ASSERT_TRUE(woke);
  ASSERT_EQ(woke->size(), 1u);
}
