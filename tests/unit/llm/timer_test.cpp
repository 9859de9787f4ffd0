// thread_timer: deadline order, tasks scheduling tasks, and a shutdown that drops what is pending.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "adapters/support/timer.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

struct recorder {
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<int> order;
  void add(int x) {
    std::lock_guard lock{mtx};
    order.push_back(x);
    cv.notify_all();
  }
  bool wait_for_count(size_t n, std::chrono::milliseconds deadline = 5s) {
    std::unique_lock lock{mtx};
    return cv.wait_for(lock, deadline, [&] { return order.size() >= n; });
  }
};

} // namespace

TEST(thread_timer, runs_tasks_in_deadline_order) {
  thread_timer t;
  recorder r;
  t.after(60ms, [&] { r.add(3); });
  t.after(0ms, [&] { r.add(1); });
  t.after(30ms, [&] { r.add(2); });
  t.after(30ms, [&] { r.add(22); }); // same deadline: submission order
  ASSERT_TRUE(r.wait_for_count(4));
  EXPECT_EQ(r.order, (std::vector<int>{1, 2, 22, 3}));
}

TEST(thread_timer, a_task_may_schedule_another) {
  thread_timer t;
  recorder r;
  t.after(1ms, [&] {
    r.add(1);
    t.after(1ms, [&] { r.add(2); });
  });
  ASSERT_TRUE(r.wait_for_count(2));
  EXPECT_EQ(r.order, (std::vector<int>{1, 2}));
}

TEST(thread_timer, shutdown_drops_pending_tasks_and_destroys_them) {
  auto alive = std::make_shared<int>(0);
  std::atomic<int> ran{0};
  {
    thread_timer t;
    t.after(10min, [alive, &ran] { ++ran; });
    t.after(10min, [alive, &ran] { ++ran; });
    EXPECT_EQ(t.pending(), 2u);
    EXPECT_EQ(alive.use_count(), 3);
    t.shutdown();
    EXPECT_EQ(t.pending(), 0u);
    EXPECT_EQ(alive.use_count(), 1); // captured state released
    t.after(0ms, [alive, &ran] { ++ran; }); // after shutdown: dropped at once
    EXPECT_EQ(alive.use_count(), 1);
  }
  EXPECT_EQ(ran.load(), 0);
}

TEST(thread_timer, a_throwing_task_does_not_stop_the_timer) {
  thread_timer t;
  recorder r;
  t.after(0ms, [] { throw std::runtime_error("boom"); });
  t.after(5ms, [&] { r.add(1); });
  ASSERT_TRUE(r.wait_for_count(1));
}
