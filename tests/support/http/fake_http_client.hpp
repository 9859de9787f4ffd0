// A scripted http_client for unit tests of the AWS clients: records every request and answers
// from its own thread (as the real engine does) with whatever the test's responder says.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "adapters/http/http_client.hpp"

namespace ingestd::test {

/// Builds an answer with a status, body and headers (names given in any case; stored lower case
/// as the engine does).
http_response make_response(long status, std::string body = {}, http_headers headers = {});

/// Enforces the http_client contract from the caller's side: submit() never calls back inside
/// itself, every callback runs exactly once on the fake's own thread, cancel() of an unknown id
/// is a no-op.
class fake_http_client final : public http_client {
public:
  using responder = std::function<result<http_response>(const http_request&)>;

  explicit fake_http_client(responder answer = {});
  ~fake_http_client() override;

  void set_responder(responder answer);

  uint64_t submit(http_request request, callback<http_response> done) override;
  void cancel(uint64_t id) override;

  /// Every request submitted so far, in order.
  std::vector<http_request> requests() const;
  size_t request_count() const;
  /// The thread that runs the callbacks.
  std::thread::id thread_id() const { return worker_.get_id(); }

private:
  struct pending {
    uint64_t id;
    http_request request;
    callback<http_response> done;
    bool cancelled = false;
  };
  void run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  responder answer_;
  std::deque<pending> queue_;
  std::vector<http_request> log_;
  uint64_t next_id_ = 1;
  bool stop_ = false;
  std::thread worker_;
};

/// The value of the request's header `name` (case-insensitive), or "" when absent.
std::string header_of(const http_request& request, std::string_view name);

} // namespace ingestd::test
