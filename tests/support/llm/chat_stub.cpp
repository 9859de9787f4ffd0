// Process management for the python stub: posix_spawn with stdout on a pipe, the first line is
// the port; the destructor kills the process it started (by pid) and reaps it.
#include "tests/support/llm/chat_stub.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ingestd::test {

chat_stub::chat_stub() {
  const char* src = std::getenv("INGESTD_SOURCE_DIR");
  if (!src || !*src)
    throw std::runtime_error("INGESTD_SOURCE_DIR is not set (run the test through ctest)");
  std::string script = std::string{src} + "/tests/support/llm/chat_stub.py";
  if (access(script.c_str(), R_OK) != 0)
    throw std::runtime_error("chat stub script not found: " + script);
  int fds[2];
  if (pipe(fds) != 0)
    throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::string py = "python3";
  char* argv[] = {py.data(), script.data(), nullptr};
  int rc = posix_spawnp(&pid_, "python3", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw std::runtime_error("cannot start python3 for the chat stub");
  }
  std::string line;
  pollfd pfd{fds[0], POLLIN, 0};
  while (line.find('\n') == std::string::npos) {
    if (poll(&pfd, 1, 10'000) <= 0)
      break;
    char buf[64];
    auto n = read(fds[0], buf, sizeof buf);
    if (n <= 0)
      break;
    line.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  port_ = std::atoi(line.c_str());
  if (port_ <= 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    throw std::runtime_error("the chat stub did not report a port");
  }
}

chat_stub::~chat_stub() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string chat_stub::base_url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

int unused_port() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (s >= 0)
      close(s);
    throw std::runtime_error("unused_port: no loopback port to bind");
  }
  socklen_t len = sizeof addr;
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(s);
  return port;
}

} // namespace ingestd::test
