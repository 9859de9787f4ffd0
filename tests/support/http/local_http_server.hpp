// A local HTTP server for tests and benchmarks: runs tests/support/http/test_http_server.py on an
// ephemeral loopback port for the lifetime of the object (routes: /delay, /status, /bytes, /echo).
#pragma once

#include <string>
#include <utility>

#include <sys/types.h>

namespace ingestd::test {

struct local_http_server_options {
  /// Defaults to the script in the source tree (INGESTD_SOURCE_DIR or the compiled-in path).
  std::string script;
  /// PEM certificate and key: when both are set the server speaks HTTPS.
  std::string tls_cert_file;
  std::string tls_key_file;
};

class local_http_server {
public:
  /// Starts the server and waits until it listens. Throws std::runtime_error with the reason when
  /// python3 or the script is missing or the server does not come up within 10 s.
  explicit local_http_server(const local_http_server_options& options = {});
  /// Kills the server process (SIGKILL) and reaps it.
  ~local_http_server();

  local_http_server(const local_http_server&) = delete;
  local_http_server& operator=(const local_http_server&) = delete;

  int port() const { return port_; }
  /// "http://127.0.0.1:<port>" (https when the server speaks TLS)
  std::string base_url() const;

private:
  pid_t pid_ = -1;
  int port_ = 0;
  bool tls_ = false;
};

/// Writes a fresh self-signed certificate for 127.0.0.1 (subjectAltName IP) and its key as PEM
/// files into `dir` with the openssl command; returns {cert, key}. Throws when openssl fails.
std::pair<std::string, std::string> make_self_signed_cert(const std::string& dir);

/// A loopback port on which nothing listens (bound, then closed), for "connection refused".
int unused_loopback_port();

} // namespace ingestd::test
