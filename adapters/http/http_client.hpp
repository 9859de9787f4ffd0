// The HTTP port used by every HTTP-speaking adapter (SQS, S3, LLM, Document AI, webhooks).
// Implemented by curl_engine: one thread running a libcurl multi handle for the whole process.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "messages/call_context.hpp"
#include "messages/error.hpp"
#include "messages/result.hpp"

namespace ingestd {

using http_headers = std::vector<std::pair<std::string, std::string>>;

struct http_request {
  std::string method = "GET";
  std::string url;
  http_headers headers;
  std::string body;
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds total_timeout{30'000};
  /// Larger responses fail with a permanent "http.too_large" error.
  size_t max_response_bytes = size_t{64} * 1024 * 1024;
  /// Bytes read per receive call, held for the whole request (CURLOPT_BUFFERSIZE, 1 KiB at least).
  /// curl's 16 KiB suits downloads; a slow call with a small answer, held open by the thousand (an
  /// LLM request), is better served by a small one: the buffer is most of its memory.
  size_t receive_buffer_bytes = size_t{16} * 1024;
  /// What the request is expected to cost against its provider's tokens-per-minute limit (an LLM
  /// call: prompt and answer); 0 for requests that are not counted in tokens.
  int64_t estimated_tokens = 0;
  /// The caller's: its hooks are told when the request waits for its provider's limits
  /// (rate_limited_client) and when it leaves that wait for the network.
  call_context context;
};

struct http_response {
  long status = 0;
  /// Header names in lower case, in arrival order.
  http_headers headers;
  std::string body;

  /// The first header with this name (case-insensitive), or "" if absent.
  std::string_view header(std::string_view name) const;
};

/// A Retry-After header value in the delay-seconds form (ASCII digits, surrounding spaces
/// allowed) in milliseconds, clamped to max_retry_after_ms; -1 when empty or not that form.
int64_t parse_retry_after_seconds(std::string_view value);

/// Asynchronous: submit returns at once; `done` is called exactly once from the engine thread,
/// with the response for any HTTP status (a 500 is a response, not an error) or with a transport
/// error: "http.timeout", "http.connect", "http.cancelled" (all transient), "http.too_large",
/// "http.tls" (permanent); behind a provider's limits also "provider.busy" (transient).
class http_client {
public:
  virtual ~http_client() = default;
  /// Returns an id for cancel().
  virtual uint64_t submit(http_request request, callback<http_response> done) = 0;
  /// Cancels a request still in flight; its callback gets "http.cancelled". No-op otherwise.
  virtual void cancel(uint64_t id) = 0;
};

} // namespace ingestd
