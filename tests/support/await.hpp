// Turns an asynchronous port call into a blocking one for tests, checking the port contract on
// the way: the callback runs exactly once, never on the calling thread, within a deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "messages/result.hpp"

namespace ingestd::test {

/// Calls `start(callback)` and waits for the callback's result. A missing answer becomes a
/// "test.no_answer" error (and a test failure), so a broken adapter fails instead of hanging.
template <class T, class Start>
result<T> await(Start&& start, std::chrono::milliseconds timeout = std::chrono::seconds{60}) {
  struct shared {
    std::promise<result<T>> promise;
    std::atomic<int> calls{0};
  };
  auto sh = std::make_shared<shared>();
  auto future = sh->promise.get_future();
  auto caller = std::this_thread::get_id();
  start([sh, caller](result<T> r) {
    if (std::this_thread::get_id() == caller)
      ADD_FAILURE() << "callback ran on the calling thread";
    if (sh->calls.fetch_add(1) != 0) {
      ADD_FAILURE() << "callback called more than once";
      return;
    }
    sh->promise.set_value(std::move(r));
  });
  if (future.wait_for(timeout) != std::future_status::ready) {
    ADD_FAILURE() << "no callback within " << timeout.count() << " ms";
    return error::make_transient("test.no_answer", "no callback within the deadline");
  }
  return future.get();
}

} // namespace ingestd::test
