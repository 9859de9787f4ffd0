// Test helpers for the asynchronous http_client port (see http_call.hpp).
#include "tests/support/http/http_call.hpp"

#include <memory>

namespace ingestd::test {

callback<http_response> http_collector::make_callback() {
  size_t index = 0;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    index = outcomes_.size();
    outcomes_.emplace_back();
  }
  return [this, index](result<http_response> r) {
    std::lock_guard<std::mutex> guard(mutex_);
    auto& o = outcomes_[index];
    if (o.calls++ == 0) {
      o.res.emplace(std::move(r));
      o.thread = std::this_thread::get_id();
    }
    ++calls_;
    cv_.notify_all();
  };
}

bool http_collector::wait_for(size_t n, std::chrono::milliseconds deadline) {
  std::unique_lock<std::mutex> guard(mutex_);
  return cv_.wait_for(guard, deadline, [&] { return calls_ >= n; });
}

size_t http_collector::calls() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return calls_;
}

std::vector<http_outcome> http_collector::outcomes() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return outcomes_;
}

std::optional<http_outcome> call(http_client& client, http_request request,
                                 std::chrono::milliseconds deadline) {
  // Shared ownership: if the deadline passes, a late callback must not touch a dead stack frame.
  auto collector = std::make_shared<http_collector>();
  auto cb = collector->make_callback();
  client.submit(std::move(request), [collector, cb](result<http_response> r) { cb(std::move(r)); });
  if (!collector->wait_for(1, deadline))
    return std::nullopt;
  return collector->outcomes().front();
}

} // namespace ingestd::test
