// priority_queues: one queue per priority class for SQS, polled with weights; the
// class queues are in-memory stand-ins that answer at once.
#include <map>

#include <gtest/gtest.h>

#include "adapters/queue/priority_queues.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

/// A queue that answers every call at once: receive takes the visible messages (any wait).
class memory_queue final : public queue {
public:
  explicit memory_queue(std::string tag) : tag_(std::move(tag)) {}

  void receive(int max_messages, std::chrono::seconds, std::chrono::seconds,
               callback<std::vector<queue_message>> done) override {
    ++receives;
    std::vector<queue_message> out;
    while (!visible.empty() && static_cast<int>(out.size()) < max_messages) {
      queue_message m;
      m.id = tag_ + "-" + visible.front();
      m.body = visible.front();
      m.receipt = "r-" + m.id;
      visible.erase(visible.begin());
      out.push_back(m);
    }
    done(std::move(out));
  }
  void remove(std::vector<std::string> receipts,
              callback<std::vector<batch_entry_result>> done) override {
    std::vector<batch_entry_result> out;
    for (auto& r : receipts) {
      removed.push_back(r);
      out.push_back(batch_entry_result{r, false, {}});
    }
    done(std::move(out));
  }
  void change_visibility(std::vector<visibility_change> changes,
                         callback<std::vector<batch_entry_result>> done) override {
    std::vector<batch_entry_result> out;
    for (auto& c : changes) {
      changed.push_back(c.receipt);
      out.push_back(batch_entry_result{c.receipt, false, {}});
    }
    done(std::move(out));
  }
  void send(std::vector<outgoing_message> messages,
            callback<std::vector<batch_entry_result>> done) override {
    std::vector<batch_entry_result> out;
    for (auto& m : messages) {
      visible.push_back(m.body);
      out.push_back(batch_entry_result{tag_ + "-id-" + m.body, false, {}});
    }
    done(std::move(out));
  }
  void stats(callback<queue_stats> done) override {
    queue_stats s;
    s.visible = static_cast<int64_t>(visible.size());
    s.oldest_age_seconds = static_cast<int64_t>(visible.size()) * 10;
    done(s);
  }
  std::string name() const override { return "memory"; }

  std::vector<std::string> visible, removed, changed;
  int receives = 0;

private:
  std::string tag_;
};

struct three_classes {
  std::shared_ptr<memory_queue> high = std::make_shared<memory_queue>("high");
  std::shared_ptr<memory_queue> normal = std::make_shared<memory_queue>("normal");
  std::shared_ptr<memory_queue> low = std::make_shared<memory_queue>("low");
  priority_queues q{{{29, 6, high}, {69, 3, normal}, {100, 1, low}}};
};

template <class T, class F>
T await_now(F start) {
  std::optional<result<T>> got;
  start([&](result<T> r) { got = std::move(r); });
  EXPECT_TRUE(got.has_value()) << "no answer";
  EXPECT_TRUE(*got) << got->error().describe();
  return **got;
}

} // namespace

TEST(priority_queues, a_message_goes_to_its_priority_class) {
  three_classes c;
  EXPECT_EQ(c.q.class_of(0), 0u);
  EXPECT_EQ(c.q.class_of(29), 0u);
  EXPECT_EQ(c.q.class_of(30), 1u);
  EXPECT_EQ(c.q.class_of(69), 1u);
  EXPECT_EQ(c.q.class_of(70), 2u);
  EXPECT_EQ(c.q.class_of(100), 2u);
  auto sent = await_now<std::vector<batch_entry_result>>([&](auto cb) {
    c.q.send({{"a", 0s, 10}, {"b", 0s, 90}, {"c", 0s, 50}, {"bad", 0s, 101}}, cb);
  });
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[0].ref, "high-id-a");
  EXPECT_EQ(sent[1].ref, "low-id-b");
  EXPECT_EQ(sent[2].ref, "normal-id-c");
  EXPECT_TRUE(sent[3].failed);
  EXPECT_EQ(c.high->visible, std::vector<std::string>{"a"});
  EXPECT_EQ(c.normal->visible, std::vector<std::string>{"c"});
  EXPECT_EQ(c.low->visible, std::vector<std::string>{"b"});
}

TEST(priority_queues, receives_start_with_each_class_as_often_as_its_weight) {
  three_classes c;
  std::map<size_t, int> first;
  for (int i = 0; i < 100; ++i) {
    auto order = c.q.next_order();
    ASSERT_EQ(order.size(), 3u);
    ++first[order.front()];
  }
  EXPECT_EQ(first[0], 60);
  EXPECT_EQ(first[1], 30);
  EXPECT_EQ(first[2], 10);
}

TEST(priority_queues, an_empty_starting_class_falls_through_to_the_most_urgent_with_messages) {
  three_classes c;
  c.low->visible = {"l1"};
  c.normal->visible = {"n1"};
  // Whichever class starts, the next tried are the most urgent first: high is empty, so the
  // normal message comes before the low one unless low starts.
  std::vector<std::string> got;
  for (int i = 0; i < 2; ++i) {
    auto msgs
        = await_now<std::vector<queue_message>>([&](auto cb) { c.q.receive(10, 0s, 30s, cb); });
    ASSERT_EQ(msgs.size(), 1u);
    got.push_back(msgs.front().body);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"n1", "l1"}));
  auto none = await_now<std::vector<queue_message>>([&](auto cb) { c.q.receive(10, 0s, 30s, cb); });
  EXPECT_TRUE(none.empty());
}

TEST(priority_queues, receipts_carry_their_class_and_route_deletes_and_visibility) {
  three_classes c;
  c.low->visible = {"l1"};
  auto msgs = await_now<std::vector<queue_message>>([&](auto cb) { c.q.receive(10, 0s, 30s, cb); });
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].receipt, "2|r-low-l1");
  EXPECT_EQ(msgs[0].priority, 70); // the class's lowest
  auto changed = await_now<std::vector<batch_entry_result>>([&](auto cb) {
    c.q.change_visibility({{msgs[0].receipt, 0s}, {"9|x", 0s}, {"nope", 0s}}, cb);
  });
  ASSERT_EQ(changed.size(), 3u);
  EXPECT_FALSE(changed[0].failed);
  EXPECT_EQ(changed[0].ref, "2|r-low-l1");
  EXPECT_TRUE(changed[1].failed);
  EXPECT_EQ(changed[1].error.code, "queue.ReceiptHandleIsInvalid");
  EXPECT_TRUE(changed[2].failed);
  EXPECT_EQ(c.low->changed, std::vector<std::string>{"r-low-l1"});
  auto removed = await_now<std::vector<batch_entry_result>>(
      [&](auto cb) { c.q.remove({msgs[0].receipt}, cb); });
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_FALSE(removed[0].failed);
  EXPECT_EQ(c.low->removed, std::vector<std::string>{"r-low-l1"});
  EXPECT_TRUE(c.high->removed.empty());
}

TEST(priority_queues, stats_add_the_classes_up) {
  three_classes c;
  c.high->visible = {"a"};
  c.low->visible = {"b", "c"};
  auto s = await_now<queue_stats>([&](auto cb) { c.q.stats(cb); });
  EXPECT_EQ(s.visible, 3);
  EXPECT_EQ(s.oldest_age_seconds, 20);
}

TEST(priority_queues, class_bounds_and_weights_are_checked) {
  EXPECT_FALSE(check_priority_classes({}, {}));
  EXPECT_FALSE(check_priority_classes({29, 69, 100}, {6, 3, 1}));
  EXPECT_TRUE(check_priority_classes({29, 69}, {6, 3}));         // does not reach 100
  EXPECT_TRUE(check_priority_classes({69, 29, 100}, {1, 1, 1})); // not ascending
  EXPECT_TRUE(check_priority_classes({29, 100}, {1}));           // a weight missing
  EXPECT_TRUE(check_priority_classes({29, 100}, {0, 1}));        // a weight of 0
  EXPECT_TRUE(check_priority_classes({}, {1}));
  auto q = std::make_shared<memory_queue>("x");
  EXPECT_THROW(priority_queues({{50, 1, q}}), std::invalid_argument);
}
