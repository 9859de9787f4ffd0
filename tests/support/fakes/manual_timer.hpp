// The fake of the timer port (adapters/support/timer.hpp) on a clock the test moves: virtual time
// for adapters that wait without a thread (a provider's rate limits, retry back-off).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

#include "adapters/support/timer.hpp"

namespace ingestd::test {

/// Tasks run only in advance(), on the test's thread, in the order they fall due (ties: the order
/// they were scheduled); a task may schedule more. now() is the clock to hand to the adapter.
class manual_timer final : public timer {
public:
  using clock = std::chrono::steady_clock;

  void after(std::chrono::milliseconds delay, std::function<void()> task) override {
    std::lock_guard lock{mtx_};
    tasks_.emplace(std::make_pair(now_ + delay, next_++), std::move(task));
  }

  clock::time_point now() const {
    std::lock_guard lock{mtx_};
    return now_;
  }

  /// Moves the clock forward by `by`, running each task when the clock reaches its time.
  void advance(std::chrono::milliseconds by) {
    clock::time_point until;
    {
      std::lock_guard lock{mtx_};
      until = now_ + by;
    }
    while (true) {
      std::function<void()> task;
      {
        std::lock_guard lock{mtx_};
        if (tasks_.empty() || tasks_.begin()->first.first > until)
          break;
        now_ = std::max(now_, tasks_.begin()->first.first);
        task = std::move(tasks_.begin()->second);
        tasks_.erase(tasks_.begin());
      }
      task();
    }
    std::lock_guard lock{mtx_};
    now_ = until;
  }

  /// Tasks scheduled and not run yet.
  size_t pending() const {
    std::lock_guard lock{mtx_};
    return tasks_.size();
  }

private:
  mutable std::mutex mtx_;
  clock::time_point now_{};
  uint64_t next_ = 0;
  std::map<std::pair<clock::time_point, uint64_t>, std::function<void()>> tasks_;
};

} // namespace ingestd::test
