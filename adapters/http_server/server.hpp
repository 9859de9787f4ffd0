// The HTTP server of the daemon's endpoints (intake, admin, review desk): GNU libmicrohttpd with
// its own polling thread (epoll), so that a slow client holds a connection but no thread, and
// handlers on a small pool of worker threads (a connection waits suspended while its handler
// runs). Every request is judged on its headers before any byte of its body is read:
//
//   Host (421) and, on POST/PUT/PATCH/DELETE, Origin (403) against the names the endpoint answers
//   to; Transfer-Encoding other than chunked (501, 415 for compression) and Content-Encoding
//   other than identity (415); the server's gate, then the route (404), its Content-Length (413)
//   and its gate (authentication: 401/403 before the body), and the memory left for bodies (503).
//
// The body is then counted as it arrives, chunked or not: 413 as soon as it passes the route's
// limit. Deadlines: the headers within header_timeout of the connection's start (or of the
// previous response), the whole request within request_timeout (408), and no silence longer than
// idle_timeout. Connections are capped in total and per client address. A handler's exception
// is answered 500 with a generic message; its text goes to the log.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/http_server/http_message.hpp"
#include "messages/result.hpp"

namespace ingestd::http_server {

using handler = std::function<void(const request&, response&)>;
/// Runs with the request's headers and route matches (no body yet): true to go on, false after
/// filling the response (its answer is sent and the body is never read). A gate that
/// authenticates may keep what it found in request::caller for the handler.
using gate = std::function<bool(request&, response&)>;
/// Renders a refusal (status, code, message) in an area's format.
using error_renderer
    = std::function<void(response&, int status, std::string_view code, std::string_view message)>;
/// Adds to every answer of an area (security headers).
using decorator = std::function<void(const request&, response&)>;

struct route_options {
  /// The largest body the route takes; 413 when the body is larger.
  size_t max_body = size_t{64} * 1024;
  /// Runs before the body is read (after the server's gate).
  gate before_body;
  /// The handler runs on the polling thread: for handlers that never block (/healthz), so that
  /// busy workers cannot delay them.
  bool inline_handler = false;
};

/// The limits an endpoint's configuration sets (intake.*, admin.*).
struct endpoint_limits {
  /// Connections at once, in all and from one client address (more are closed at once).
  unsigned max_connections = 64;
  unsigned max_connections_per_address = 16;
  /// The request line and headers must arrive within this (from the connection's start or the
  /// previous response).
  std::chrono::seconds header_timeout{10};
  /// The whole request (headers and body) must arrive within this.
  std::chrono::seconds request_timeout{60};
  /// The bodies of all requests in progress together (503 with Retry-After past it).
  size_t max_buffered_bytes = size_t{64} << 20;
};

struct server_options {
  /// In log lines and error codes: "intake", "admin".
  std::string name = "http";
  std::string bind = "127.0.0.1";
  /// 0: any free port.
  int port = 0;
  /// Threads that run handlers.
  int worker_threads = 2;
  endpoint_limits limits;
  /// A connection silent for this long is closed (also an idle keep-alive connection).
  std::chrono::seconds idle_timeout{30};
  /// Memory for one connection's request line, headers and read buffer (libmicrohttpd's pool).
  size_t memory_per_connection = size_t{64} * 1024;
  /// Host names the endpoint answers to besides loopback names and IP literals ("*": any). The
  /// bind address, when it is a name, is added.
  std::vector<std::string> allowed_hosts;
};

class server {
public:
  explicit server(server_options opts);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// A route: `pattern` (ECMAScript regex) must match the whole path. HEAD is served by GET's.
  void route(std::string method, const std::string& pattern, handler h, route_options o = {});
  void get(const std::string& pattern, handler h, route_options o = {});
  void post(const std::string& pattern, handler h, route_options o = {});
  void del(const std::string& pattern, handler h, route_options o = {});

  /// Runs for every request, before the route is looked up (authentication of a whole endpoint).
  void set_gate(gate g);
  /// Refusals of paths under `prefix` are rendered by `render` and every answer under it passes
  /// `decorate` (either may be empty); the longest prefix wins. "" is the default area (plain
  /// text).
  void set_area(std::string prefix, error_renderer render, decorator decorate = {});
  /// More worker threads (before start()).
  void add_worker_threads(int n);
  const server_options& options() const;

  /// Binds (port 0: any free port) and starts serving.
  result<void> start();
  /// The bound port (after start()).
  int port() const;
  /// Stops accepting, lets the handlers under way finish, closes every connection (idempotent).
  void stop();

  /// The server's state (named here so that libmicrohttpd's callbacks can reach it).
  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

} // namespace ingestd::http_server
