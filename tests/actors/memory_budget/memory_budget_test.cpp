// The node's memory budget (actors/memory_budget.hpp): what fits is granted at once, the rest
// waits in arrival order and is granted by the give-backs; a request larger than the budget runs
// alone; a stop withdraws a waiting request; nothing ever fails for want of budget.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/memory_budget.hpp"

using namespace ingestd;

namespace {

using reservation_ptr = std::shared_ptr<memory_budget::reservation>;

/// Requests made in a test and what each was answered, in the order of the answers.
struct requests {
  std::shared_ptr<memory_budget> budget;
  std::vector<reservation_ptr> held;
  std::vector<std::string> order;

  /// Reserves `bytes` as `name`; the grant is kept in held[index] (the index is returned).
  size_t ask(const std::string& name, uint64_t bytes, const std::stop_token& stop = {}) {
    auto index = held.size();
    held.emplace_back();
    budget->reserve(
        bytes,
        [this, name, index](reservation_ptr r) {
          order.push_back(r ? name : name + " withdrawn");
          held[index] = std::move(r);
        },
        stop);
    return index;
  }
};

} // namespace

TEST(memory_budget, what_fits_is_granted_at_once_and_the_rest_waits_in_arrival_order) {
  requests q{std::make_shared<memory_budget>(100)};
  auto a = q.ask("a", 60);
  auto b = q.ask("b", 40);
  EXPECT_EQ(q.order, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(q.budget->reserved(), 100u);
  // c needs 50, then d only 10: d does not overtake c although it would fit first.
  auto c = q.ask("c", 50);
  auto d = q.ask("d", 10);
  EXPECT_EQ(q.budget->waiting(), 2u);
  q.held[b].reset(); // 40 free: c still does not fit, so d waits behind it
  EXPECT_EQ(q.order.size(), 2u);
  EXPECT_EQ(q.budget->reserved(), 60u);
  q.held[a].reset(); // 100 free: c and d both
  EXPECT_EQ(q.order, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(q.budget->reserved(), 60u);
  EXPECT_EQ(q.budget->waiting(), 0u);
  q.held[c].reset();
  q.held[d].reset();
  EXPECT_EQ(q.budget->reserved(), 0u);
}

TEST(memory_budget, a_request_larger_than_the_budget_runs_alone) {
  requests q{std::make_shared<memory_budget>(100)};
  auto small = q.ask("small", 10);
  auto big = q.ask("big", 500);
  auto after = q.ask("after", 10);
  EXPECT_EQ(q.order, (std::vector<std::string>{"small"}));
  q.held[small].reset();
  // Alone: whatever comes after waits until it is done.
  EXPECT_EQ(q.order, (std::vector<std::string>{"small", "big"}));
  EXPECT_EQ(q.budget->reserved(), 500u);
  q.held[big].reset();
  EXPECT_EQ(q.order, (std::vector<std::string>{"small", "big", "after"}));
  q.held[after].reset();
  // With nothing reserved it is granted at once.
  auto again = q.ask("again", 1000);
  EXPECT_EQ(q.order.back(), "again");
  q.held[again].reset();
  EXPECT_EQ(q.budget->reserved(), 0u);
}

TEST(memory_budget, a_stop_withdraws_a_waiting_request_and_lets_the_next_one_in) {
  requests q{std::make_shared<memory_budget>(100)};
  auto first = q.ask("first", 80);
  std::stop_source cancel;
  q.ask("big", 90, cancel.get_token());
  auto small = q.ask("small", 20);
  EXPECT_EQ(q.order, (std::vector<std::string>{"first"}));
  cancel.request_stop();
  // The withdrawn one is answered null; the one behind it fits now.
  EXPECT_EQ(q.order, (std::vector<std::string>{"first", "big withdrawn", "small"}));
  EXPECT_EQ(q.budget->reserved(), 100u);
  // A stop after the grant changes nothing; one already requested withdraws at once.
  std::stop_source late;
  q.held[first].reset();
  q.held[small].reset();
  auto granted = q.ask("granted", 50, late.get_token());
  late.request_stop();
  EXPECT_EQ(q.order.back(), "granted");
  EXPECT_EQ(q.budget->reserved(), 50u);
  auto blocker = q.ask("blocker", 50);
  std::stop_source early;
  early.request_stop();
  q.ask("early", 10, early.get_token());
  EXPECT_EQ(q.order.back(), "early withdrawn");
  EXPECT_EQ(q.budget->waiting(), 0u);
  q.held[granted].reset();
  q.held[blocker].reset();
  EXPECT_EQ(q.budget->reserved(), 0u);
}

TEST(memory_budget, give_backs_from_other_threads_grant_every_waiting_request_once) {
  auto budget = std::make_shared<memory_budget>(10);
  constexpr int n = 200;
  std::mutex mtx;
  std::vector<reservation_ptr> granted;
  int answers = 0;
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < n; ++i)
        budget->reserve(3, [&](reservation_ptr r) {
          std::lock_guard<std::mutex> guard{mtx};
          ++answers;
          granted.push_back(std::move(r));
        });
    });
  // Give back whatever was granted until every request was answered (each waits for this), or
  // until a deadline far beyond what it takes.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  for (;;) {
    std::vector<reservation_ptr> done;
    {
      std::lock_guard<std::mutex> guard{mtx};
      done.swap(granted);
      if (answers == 4 * n && done.empty())
        break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "only " << answers << " answers by the deadline";
      break;
    }
    EXPECT_LE(budget->reserved(), 10u);
    done.clear();
    std::this_thread::yield();
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(answers, 4 * n);
  EXPECT_EQ(budget->reserved(), 0u);
  EXPECT_EQ(budget->waiting(), 0u);
}
