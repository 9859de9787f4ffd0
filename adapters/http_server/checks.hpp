// What the HTTP server decides from a request's headers alone, before any byte of its body is
// read, and the small security checks the endpoints share: Host and Origin against the names an
// endpoint answers to (DNS rebinding, cross-site requests), the framing and coding of the body,
// its announced length, secrets compared in constant time, a token's minimum length, and a
// sliding window of attempts per key (sign-in throttling). Pure functions, unit-tested.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "adapters/http_server/http_message.hpp"

namespace ingestd::http_server {

/// A Host header's or an Origin's host and port; the host lower-cased, an IPv6 address without
/// its brackets, a trailing dot removed; `port` empty when none was given.
struct authority {
  std::string host;
  std::string port;
};

/// "example.org:8080", "[::1]:80", "127.0.0.1": nullopt when it is not host[:port].
std::optional<authority> parse_authority(std::string_view text);

/// Whether `host` is an IPv4 or IPv6 address literal.
bool is_ip_literal(std::string_view host);

/// Whether a request with this Host header may be answered. A name reached through DNS could be
/// an attacker's name rebound to this address, so a name is answered only when it is a loopback
/// name (localhost, *.localhost) or one of `names`; an IP address literal always is (no DNS was
/// involved: a browser sends a literal only to the address it names). "*" in `names`: any Host.
/// An empty Host (HTTP/1.0) is allowed.
bool host_allowed(std::string_view host_header, const std::vector<std::string>& names);

/// Whether a state-changing request (POST, PUT, PATCH, DELETE) that carries this Origin may go
/// on: its host and port are the request's own (Host), or its host is one of `names` (a proxy in
/// front that rewrites Host). "null" and anything malformed are refused. A request without an
/// Origin (not from a browser's page) is not judged here.
bool origin_allowed(std::string_view origin, std::string_view host_header,
                    const std::vector<std::string>& names);

/// POST, PUT, PATCH and DELETE.
bool state_changing(std::string_view method);

/// A refusal: the status and a code and message for the client (no internal detail).
struct refusal {
  int status = 400;
  std::string code;
  std::string message;
};

/// What a route allows before its body is read.
struct head_rules {
  /// Names besides loopback names and IP literals (see host_allowed).
  std::vector<std::string> allowed_hosts;
  /// The largest body the route takes, in bytes.
  size_t max_body = 0;
};

/// The body's announced length: nullopt when there is none (or the body is chunked).
struct body_framing {
  bool chunked = false;
  std::optional<uint64_t> content_length;
};

/// Checks a request's headers against `rules`, in this order: Host (421), Transfer-Encoding
/// other than chunked (501; a compression coding 415), Content-Length together with
/// Transfer-Encoding or not a number (400), Content-Encoding other than identity (415), Origin on
/// a state-changing method (403), Content-Length over max_body (413). nullopt: go on. `framing`
/// receives what the headers say of the body.
std::optional<refusal> check_head(std::string_view method, const header_map& headers,
                                  const head_rules& rules, body_framing* framing = nullptr);

/// Equal secrets, compared in time that depends on neither where they differ nor the expected
/// secret's length (both are hashed first).
bool secrets_equal(std::string_view given, std::string_view expected);

/// The shortest token the daemon accepts for an endpoint.
inline constexpr size_t min_token_length = 16;

/// A message naming `variable` when `token` is set but shorter than min_token_length (an unset
/// token is judged elsewhere); nullopt when it is long enough.
std::optional<std::string> weak_token(std::string_view variable, std::string_view token);

/// Attempts per key within a sliding window (sign-in throttling): after `limit` attempts within
/// `window`, the key is blocked until the oldest of them leaves the window. At most `max_keys`
/// keys are kept (those whose attempts have all left the window go first, then the least recently
/// used). Thread-safe.
class attempt_window {
public:
  using clock = std::chrono::steady_clock;

  attempt_window(size_t limit, std::chrono::seconds window, size_t max_keys = 10000);

  /// When `key` may try again: nullopt when it may now.
  std::optional<std::chrono::seconds> blocked_for(const std::string& key, clock::time_point now);
  /// Counts an attempt of `key` (a failed sign-in).
  void record(const std::string& key, clock::time_point now);
  /// Forgets `key`'s attempts.
  void clear(const std::string& key);
  size_t keys() const;

private:
  void prune(clock::time_point now);

  size_t limit_;
  std::chrono::seconds window_;
  size_t max_keys_;
  mutable std::mutex mtx_;
  std::unordered_map<std::string, std::deque<clock::time_point>> attempts_;
};

} // namespace ingestd::http_server
