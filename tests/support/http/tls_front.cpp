// Starts nghttpx in front of a plain HTTP server (see tls_front.hpp).
#include "tests/support/http/tls_front.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/support/http/local_http_server.hpp"

namespace ingestd::test {

namespace {

bool accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (fd >= 0)
    close(fd);
  return ok;
}

} // namespace

tls_front::tls_front(int backend_port, const std::string& cert_file, const std::string& key_file,
                     const std::string& alpn) {
  port_ = unused_loopback_port();
  std::vector<std::string> args{"nghttpx",
                                "--frontend=127.0.0.1," + std::to_string(port_),
                                "--backend=127.0.0.1," + std::to_string(backend_port),
                                "--workers=1",
                                "--npn-list=" + alpn,
                                "--no-ocsp",
                                "--no-via",
                                "--log-level=ERROR",
                                "--errorlog-file=/dev/null",
                                "--backend-read-timeout=120s",
                                "--frontend-read-timeout=120s",
                                "--rlimit-nofile=1048576",
                                "--conf=/dev/null",
                                key_file,
                                cert_file};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  if (posix_spawnp(&pid_, "nghttpx", nullptr, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("nghttpx is not installed (apt-get install nghttp2-proxy; "
                             "deploy/install-deps.sh installs it)");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (!accepts(port_)) {
    if (std::chrono::steady_clock::now() > deadline || waitpid(pid_, nullptr, WNOHANG) == pid_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
      throw std::runtime_error("nghttpx did not listen on port " + std::to_string(port_)
                               + " within 10 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{20}); // polling a condition
  }
}

tls_front::~tls_front() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string tls_front::base_url() const {
  return "https://127.0.0.1:" + std::to_string(port_);
}

} // namespace ingestd::test
