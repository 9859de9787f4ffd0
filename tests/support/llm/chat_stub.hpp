// Starts tests/support/llm/chat_stub.py (the chat-completions stub and webhook receiver) on an
// ephemeral loopback port for one test fixture, and stops it again.
#pragma once

#include <string>
#include <sys/types.h>

namespace ingestd::test {

class chat_stub {
public:
  /// Starts the stub and waits for its port (throws std::runtime_error with the reason if
  /// python3 or the script is missing).
  chat_stub();
  /// Kills the stub (SIGKILL) and reaps it.
  ~chat_stub();
  chat_stub(const chat_stub&) = delete;
  chat_stub& operator=(const chat_stub&) = delete;

  int port() const { return port_; }
  /// "http://127.0.0.1:<port>"
  std::string base_url() const;

private:
  pid_t pid_ = -1;
  int port_ = 0;
};

/// A loopback port with nothing listening (bound, then closed): a dead receiver.
int unused_port();

} // namespace ingestd::test
