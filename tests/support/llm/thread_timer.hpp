// A timer on a thread of its own, for the OpenAI client's unit tests, whose fake http_client has
// no engine thread to lend (in the daemon, the HTTP engine is the timer).
#pragma once

#include "adapters/support/timer.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace ingestd {

/// One thread, tasks ordered by deadline (ties in submission order).
class thread_timer final : public timer {
public:
  thread_timer();
  /// Calls shutdown().
  ~thread_timer() override;
  thread_timer(const thread_timer&) = delete;
  thread_timer& operator=(const thread_timer&) = delete;

  void after(std::chrono::milliseconds delay, std::function<void()> task) override;

  /// Stops the thread after the task running now (if any); drops pending tasks and any task
  /// submitted later, destroying them outside the lock. Idempotent; must not be called from a task.
  void shutdown();

  /// Tasks waiting for their deadline.
  size_t pending() const;

private:
  using clock = std::chrono::steady_clock;
  void run();

  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::multimap<std::pair<clock::time_point, uint64_t>, std::function<void()>> tasks_;
  uint64_t next_seq_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace ingestd
