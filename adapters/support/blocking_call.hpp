// Blocking on an asynchronous port call, for the command-line tools and the intake's request
// threads (never inside an actor): start the call, wait for its callback, up to a deadline.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <string_view>

#include "messages/result.hpp"

namespace ingestd {

/// The transient error `code` saying that `what` did not answer within `timeout`.
inline error timeout_error(std::string_view code, std::string_view what,
                           std::chrono::milliseconds timeout) {
  // Appended piece by piece: GCC 12 warns falsely (array-bounds) on chained operator+ here.
  auto ms = timeout.count();
  std::string message{what};
  message.append(" did not answer within ");
  message.append(std::to_string(ms % 1000 == 0 ? ms / 1000 : ms));
  message.append(ms % 1000 == 0 ? " s" : " ms");
  return error::make_transient(std::string{code}, std::move(message));
}

/// Calls `start(callback)` and waits for the callback's result<T>. When `timeout` passes first,
/// returns a transient error with `code` saying that `what` did not answer in time (the late
/// callback is then answered into a promise nobody reads).
template <class T, class Start>
result<T> blocking_call(std::chrono::milliseconds timeout, std::string_view code,
                        std::string_view what, Start&& start) {
  auto p = std::make_shared<std::promise<result<T>>>();
  auto f = p->get_future();
  start([p](result<T> r) { p->set_value(std::move(r)); });
  if (f.wait_for(timeout) != std::future_status::ready)
    return timeout_error(code, what, timeout);
  return f.get();
}

} // namespace ingestd
