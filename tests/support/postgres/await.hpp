// Turns an asynchronous port call into a blocking one for tests: waits for the callback with a
// deadline and fails the test when it is called twice or never.
#pragma once

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "messages/result.hpp"

namespace ingestd::test {

/// Calls `start(callback)` and returns the result the callback receives; throws when it does not
/// arrive within `timeout`.
template <class T, class Start>
result<T> await(Start&& start, std::chrono::milliseconds timeout = std::chrono::seconds{30}) {
  auto promise = std::make_shared<std::promise<result<T>>>();
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto future = promise->get_future();
  start([promise, calls](result<T> r) {
    if (calls->fetch_add(1) == 0)
      promise->set_value(std::move(r));
    else
      ADD_FAILURE() << "a port called its callback more than once";
  });
  if (future.wait_for(timeout) != std::future_status::ready)
    throw std::runtime_error("the port did not call back within " + std::to_string(timeout.count())
                             + " ms");
  return future.get();
}

} // namespace ingestd::test
