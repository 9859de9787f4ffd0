// Test helpers for the asynchronous http_client port: wait for one callback with a deadline, and
// count callbacks of many requests (to check "exactly once").
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "adapters/http/http_client.hpp"

namespace ingestd::test {

/// The outcome of one request: its result, the thread that delivered it and how often the
/// callback ran (must be 1).
struct http_outcome {
  std::optional<result<http_response>> res;
  std::thread::id thread;
  int calls = 0;
};

/// Collects the outcomes of requests submitted through make_callback(); thread-safe.
class http_collector {
public:
  /// A callback for the next request; outcomes are indexed in creation order.
  callback<http_response> make_callback();
  /// Waits until `n` callbacks ran (or the deadline passed); true when they did.
  bool wait_for(size_t n, std::chrono::milliseconds deadline);
  /// Callbacks that ran so far (counting repeats).
  size_t calls() const;
  /// A copy of the outcomes (call after wait_for).
  std::vector<http_outcome> outcomes() const;

private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<http_outcome> outcomes_;
  size_t calls_ = 0;
};

/// Submits `request` and waits up to `deadline` for its callback; an empty optional on timeout.
std::optional<http_outcome> call(http_client& client, http_request request,
                                 std::chrono::milliseconds deadline = std::chrono::seconds(20));

} // namespace ingestd::test
