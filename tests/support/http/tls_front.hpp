// TLS and HTTP/2 in front of a plain HTTP server on loopback, as a hosted provider speaks them:
// nghttpx (Debian's nghttp2-proxy) started as a child process for the lifetime of the object.
#pragma once

#include <string>

#include <sys/types.h>

namespace ingestd::test {

class tls_front {
public:
  /// Listens on a free loopback port with the PEM certificate and key (make_self_signed_cert),
  /// offering the ALPN protocols `alpn` ("h2,http/1.1": HTTP/2 for clients that ask for it;
  /// "http/1.1": HTTP/1.1 only), and forwards every request to 127.0.0.1:`backend_port` over
  /// HTTP/1.1 with as many connections as there are requests. Throws std::runtime_error with the
  /// reason when nghttpx is missing or does not listen within 10 s.
  tls_front(int backend_port, const std::string& cert_file, const std::string& key_file,
            const std::string& alpn = "h2,http/1.1");
  /// Kills nghttpx (SIGKILL) and reaps it.
  ~tls_front();

  tls_front(const tls_front&) = delete;
  tls_front& operator=(const tls_front&) = delete;

  int port() const { return port_; }
  /// "https://127.0.0.1:<port>"
  std::string base_url() const;

private:
  pid_t pid_ = -1;
  int port_ = 0;
};

} // namespace ingestd::test
