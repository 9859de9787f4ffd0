// thread_timer (tests): a deadline-ordered task map served by one thread. Tasks run outside the
// lock so a task may schedule another; an exception from a task is logged and does not stop the
// thread.
#include "tests/support/llm/thread_timer.hpp"

#include <exception>
#include <vector>

#include <spdlog/spdlog.h>

namespace ingestd {

thread_timer::thread_timer() : thread_([this] { run(); }) {}

thread_timer::~thread_timer() {
  shutdown();
}

void thread_timer::after(std::chrono::milliseconds delay, std::function<void()> task) {
  if (!task)
    return;
  std::unique_lock lock{mtx_};
  if (stopping_) {
    lock.unlock();
    return; // `task` is destroyed here, outside the lock
  }
  if (delay.count() < 0)
    delay = std::chrono::milliseconds{0};
  tasks_.emplace(std::make_pair(clock::now() + delay, next_seq_++), std::move(task));
  lock.unlock();
  cv_.notify_one();
}

void thread_timer::shutdown() {
  decltype(tasks_) dropped;
  {
    std::lock_guard lock{mtx_};
    if (stopping_ && !thread_.joinable())
      return;
    stopping_ = true;
    dropped.swap(tasks_);
  }
  cv_.notify_one();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id())
    thread_.join();
  // `dropped` is destroyed here: destructors of pending tasks may call back into user code.
}

size_t thread_timer::pending() const {
  std::lock_guard lock{mtx_};
  return tasks_.size();
}

void thread_timer::run() {
  std::unique_lock lock{mtx_};
  for (;;) {
    if (stopping_)
      return;
    if (tasks_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto first = tasks_.begin();
    if (first->first.first > clock::now()) {
      cv_.wait_until(lock, first->first.first);
      continue;
    }
    auto task = std::move(first->second);
    tasks_.erase(first);
    lock.unlock();
    try {
      task();
    } catch (const std::exception& e) {
      spdlog::error("timer task threw: {}", e.what());
    } catch (...) {
      spdlog::error("timer task threw a non-standard exception");
    }
    task = nullptr; // destroy captured state before taking the lock again
    lock.lock();
  }
}

} // namespace ingestd
