// One provider's limits (an LLM API, Document AI, a webhook receiver) in front of the HTTP engine:
// at most so many requests at once, so many per minute and, for an LLM, so many tokens per minute.
// A request over a limit waits in line, first come first served, without holding a thread: it is
// sent when an earlier request answers or when the budget refills (a timer), or fails with the
// transient "provider.busy" once it has waited max_wait.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/http/http_client.hpp"
#include "adapters/support/timer.hpp"

namespace ingestd {

/// 0 means "no limit" for each.
struct provider_limits {
  int max_concurrent = 0;
  int requests_per_minute = 0;
  /// Counted in http_request::estimated_tokens.
  int64_t tokens_per_minute = 0;
  /// A request that waited this long for the limits fails with "provider.busy" (transient: the
  /// job gives its work back without counting an attempt).
  std::chrono::milliseconds max_wait{std::chrono::minutes{10}};

  bool any() const {
    return max_concurrent > 0 || requests_per_minute > 0 || tokens_per_minute > 0;
  }
};

/// A snapshot for metrics and tests.
struct provider_limit_stats {
  /// Now: waiting for the limits, and sent and not answered yet.
  uint64_t waiting = 0;
  uint64_t in_flight = 0;
  /// So far: requests sent, those of them that had to wait first and how long all of them
  /// waited, requests that gave up waiting, and the estimated tokens sent.
  uint64_t sent = 0;
  uint64_t waited = 0;
  double wait_seconds = 0;
  uint64_t busy = 0;
  int64_t tokens = 0;
};

/// The http_client of one provider. The per-minute limits are token buckets that hold one
/// second's worth (at least one request): requests go out evenly, never a minute's worth at
/// once; a request that costs more tokens than the bucket holds goes when the bucket is full.
/// submit() and cancel() may be called from any thread; `inner` and `wake` (the HTTP engine is
/// both) must outlive it. Destroying it answers the requests still waiting "http.cancelled";
/// those already sent answer from `inner`.
class rate_limited_client final : public http_client {
public:
  using clock_fn = std::function<std::chrono::steady_clock::time_point()>;

  /// `provider` names it in metrics and errors ("llm", "document_ai", "webhook"). `now` is the
  /// steady clock unless a test passes its own.
  rate_limited_client(std::string provider, http_client& inner, timer& wake, provider_limits limits,
                      clock_fn now = {});
  ~rate_limited_client() override;
  rate_limited_client(const rate_limited_client&) = delete;
  rate_limited_client& operator=(const rate_limited_client&) = delete;

  uint64_t submit(http_request request, callback<http_response> done) override;
  void cancel(uint64_t id) override;

  const std::string& provider() const;
  const provider_limits& limits() const;
  provider_limit_stats stats() const;

  /// Implementation detail: the line and the buckets, shared with the callbacks and timer tasks
  /// that may outlive this object (defined in the .cpp).
  struct state;

private:
  std::shared_ptr<state> st_;
};

/// The limiters' figures and settings in Prometheus text: ingestd_provider_requests_waiting,
/// _in_flight, _total, ingestd_provider_limit_waits_total, _wait_seconds_total, _busy_total,
/// ingestd_provider_tokens_total and ingestd_provider_limit{kind}, each by provider.
std::string
provider_limits_prometheus(const std::vector<std::shared_ptr<rate_limited_client>>& limiters);

} // namespace ingestd
