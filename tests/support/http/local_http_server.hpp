// A local HTTP server for tests and benchmarks: runs tests/support/http/test_http_server.py on an
// ephemeral loopback port for the lifetime of the object (routes: /delay, /status, /bytes, /echo).
#pragma once

#include <string>

#include <sys/types.h>

namespace ingestd::test {

class local_http_server {
public:
  /// Starts the server and waits until it listens. Throws std::runtime_error with the reason when
  /// python3 or the script is missing or the server does not come up within 10 s.
  /// `script` defaults to the one in the source tree (INGESTD_SOURCE_DIR or the compiled-in path).
  explicit local_http_server(std::string script = {});
  /// Kills the server process (SIGKILL) and reaps it.
  ~local_http_server();

  local_http_server(const local_http_server&) = delete;
  local_http_server& operator=(const local_http_server&) = delete;

  int port() const { return port_; }
  /// "http://127.0.0.1:<port>"
  std::string base_url() const;

private:
  pid_t pid_ = -1;
  int port_ = 0;
};

/// A loopback port on which nothing listens (bound, then closed), for "connection refused".
int unused_loopback_port();

} // namespace ingestd::test
