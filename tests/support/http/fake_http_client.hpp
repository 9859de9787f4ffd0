// The one fake of the http_client port (adapters/http/http_client.hpp) for the unit tests of every
// HTTP-speaking adapter: scripted answers from its own thread, as the real engine gives them.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "adapters/http/http_client.hpp"

namespace ingestd::test {

/// Builds an answer with a status, body and headers (names given in any case; stored lower case
/// as the engine does).
http_response make_response(long status, std::string body = {}, const http_headers& headers = {});

/// Keeps the http_client contract as the real engine does: submit() never calls back inside
/// itself; every callback runs exactly once, in submission order, on the fake's own thread; a
/// request cancelled while queued, or still queued when the fake is destroyed, gets
/// "http.cancelled"; cancel() of a finished request is a no-op. Records every request. Lists the
/// caller's misuse in violations() (a request without method or URL or with a timeout of zero, a
/// cancel() of an id it never issued, a submit() once destruction has begun) and reports each one
/// as a test failure when it is destroyed.
class fake_http_client final : public http_client {
public:
  /// Computes the answer to one request (called on the fake's thread, one request at a time).
  using responder = std::function<result<http_response>(const http_request&)>;

  /// Without a responder every request fails with a transient "http.connect".
  explicit fake_http_client(responder answer = {});
  ~fake_http_client() override;

  void set_responder(responder answer);
  /// Every later request gets `answer`.
  void respond_with(result<http_response> answer);

  uint64_t submit(http_request request, callback<http_response> done) override;
  void cancel(uint64_t id) override;

  /// From now on requests wait, unanswered, until release() lets them go (oldest first): a test
  /// holds requests "on the network" as long as it wants.
  void hold();
  /// Lets the `n` oldest held requests (and those that come later, up to `n` in all) be answered.
  void release(size_t n = 1);
  /// Requests submitted and not answered yet.
  size_t unanswered() const;

  /// Every request submitted so far, in order.
  std::vector<http_request> requests() const;
  size_t request_count() const;
  /// The thread that runs the callbacks.
  std::thread::id thread_id() const { return worker_.get_id(); }
  /// The caller's misuse so far (see the class comment).
  std::vector<std::string> violations() const;

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
  std::vector<std::string> violations_;
  uint64_t next_id_ = 1;
  bool stop_ = false;
  bool holding_ = false;
  size_t released_ = 0;
  /// Taken off the queue by the worker and not answered yet.
  size_t answering_ = 0;
  std::thread worker_;
};

/// The value of the request's header `name` (case-insensitive), or "" when absent.
std::string header_of(const http_request& request, std::string_view name);

} // namespace ingestd::test
