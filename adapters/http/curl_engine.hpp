// The process-wide HTTP engine: one thread runs libcurl multi handles that carry every HTTP
// request of the process concurrently (thousands in flight), behind the http_client port.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "adapters/http/http_client.hpp"
#include "adapters/support/timer.hpp"

namespace ingestd {

struct curl_engine_options {
  /// curl multi handles the engine thread spreads transfers over (each new transfer goes to the
  /// least busy). libcurl 7.88 walks every connection of a multi handle when a transfer ends and
  /// when it looks for a connection to reuse, so one multi handle costs O(in flight) per request;
  /// 16 lanes divide that by 16 at 10,000 in flight. Connections are reused within a lane.
  int lanes = 16;
  /// Upper bound on open connections across all hosts (CURLMOPT_MAX_TOTAL_CONNECTIONS);
  /// requests beyond it wait in curl's queue. 0 = unlimited. Setting it (or the next one) puts
  /// every transfer in one lane, so that the bound holds for the whole engine.
  long max_total_connections = 0;
  /// Upper bound on open connections to one host (CURLMOPT_MAX_HOST_CONNECTIONS). 0 = unlimited.
  long max_connections_per_host = 0;
  /// Upper bound on open connections to one https host, per lane, when neither bound above is set.
  /// https requests have lanes of their own and go as HTTP/2 streams over shared connections
  /// (100 a connection, typically); without a bound, libcurl 7.88 opens a connection, with its
  /// TLS session, for each request of a burst that finds the open ones full (10,000 requests made
  /// 1,016 connections). Requests beyond the streams wait in curl's queue, their total deadline
  /// running. A host that speaks only HTTP/1.1 over TLS gets no more requests in flight than this
  /// times the lanes. 0 = unlimited.
  long https_connections_per_host = 16;
  /// Idle connections kept for reuse (CURLMOPT_MAXCONNECTS), per lane. 0 = curl's default.
  long connection_cache_size = 0;
  /// Sent as User-Agent unless the request sets its own.
  std::string user_agent = "ingestd/0.1";
  /// CA bundle path for TLS verification; empty = the system default.
  std::string ca_file;
};

/// Counters for metrics and tests (a snapshot; thread-safe).
struct curl_engine_stats {
  uint64_t submitted = 0;
  uint64_t completed = 0;
  /// Submitted and not completed yet (queued or in curl).
  uint64_t in_flight = 0;
  /// Highest in_flight seen.
  uint64_t peak_in_flight = 0;
};

/// The http_client implementation. submit() and cancel() may be called from any thread
/// (including from a completion callback); callbacks run on the engine thread, exactly once per
/// request, also for requests still in flight when the engine is destroyed ("http.cancelled").
/// Callbacks must not block: they hold up every other request of the process.
///
/// It is also a timer whose tasks run on the engine thread (the LLM client's retry back-off, which
/// only submits the next request): one thread for both. Tasks pending when the engine is
/// destroyed are destroyed without running, after the transfers are cancelled.
class curl_engine final : public http_client, public timer {
public:
  /// Starts the engine thread. Throws std::runtime_error only when libcurl cannot be initialised
  /// at all (an impossible condition on a working installation).
  explicit curl_engine(curl_engine_options options = {});
  /// Cancels what is in flight (each callback gets "http.cancelled", on the engine thread, before
  /// this returns) and joins the thread. Must not run on the engine thread (from a callback).
  ~curl_engine() override;

  curl_engine(const curl_engine&) = delete;
  curl_engine& operator=(const curl_engine&) = delete;

  uint64_t submit(http_request request, callback<http_response> done) override;
  void cancel(uint64_t id) override;
  void after(std::chrono::milliseconds delay, std::function<void()> task) override;

  curl_engine_stats stats() const;
  /// The id of the one thread that runs every transfer and every callback.
  std::thread::id thread_id() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ingestd
