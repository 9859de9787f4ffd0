// Starts and stops the Python test HTTP server as a child process (see local_http_server.hpp).
// The child prints "PORT <n>" once it listens; we read that line with a deadline.
#include "tests/support/http/local_http_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include "tests/support/environment.hpp"

#ifndef INGESTD_TEST_HTTP_SERVER_SCRIPT
#  define INGESTD_TEST_HTTP_SERVER_SCRIPT ""
#endif

namespace ingestd::test {

namespace {

std::string default_script() {
  auto root = env_or("INGESTD_SOURCE_DIR", "");
  if (!root.empty())
    return root + "/tests/support/http/test_http_server.py";
  return INGESTD_TEST_HTTP_SERVER_SCRIPT;
}

} // namespace

local_http_server::local_http_server(const local_http_server_options& options) {
  auto script = options.script.empty() ? default_script() : options.script;
  tls_ = !options.tls_cert_file.empty() && !options.tls_key_file.empty();
  if (script.empty() || access(script.c_str(), R_OK) != 0)
    throw std::runtime_error("test HTTP server script not found: '" + script
                             + "' (set INGESTD_SOURCE_DIR)");
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe2 failed");
  pid_ = fork();
  if (pid_ < 0)
    throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    if (tls_)
      execlp("python3", "python3", script.c_str(), "0", options.tls_cert_file.c_str(),
             options.tls_key_file.c_str(), static_cast<char*>(nullptr));
    else
      execlp("python3", "python3", script.c_str(), "0", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (text.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    pollfd p{out[0], POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0)
      break;
    char buf[64];
    auto n = read(out[0], buf, sizeof(buf));
    if (n <= 0)
      break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  if (!text.starts_with("PORT ") || text.find('\n') == std::string::npos) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    throw std::runtime_error("test HTTP server did not start (python3 " + script + "): '" + text
                             + "'");
  }
  port_ = std::atoi(text.c_str() + 5);
}

local_http_server::~local_http_server() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string local_http_server::base_url() const {
  return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_);
}

std::pair<std::string, std::string> make_self_signed_cert(const std::string& dir) {
  auto cert = dir + "/cert.pem";
  auto key = dir + "/key.pem";
  auto cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1"
             " -addext subjectAltName=IP:127.0.0.1 -keyout '"
             + key + "' -out '" + cert + "' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0)
    throw std::runtime_error("openssl could not create a self-signed certificate in " + dir);
  return {cert, key};
}

int unused_loopback_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0
      || getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0)
      close(fd);
    throw std::runtime_error("could not bind a loopback port");
  }
  close(fd); // bound but never listened on, and now closed: connecting is refused
  return ntohs(addr.sin_port);
}

} // namespace ingestd::test
