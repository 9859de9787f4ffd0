// `ingestd run` as a child process for the end-to-end tests: an environment of overrides, its
// output captured to a file, signals, and a wait for its exit with a deadline.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace ingestd::test {

/// One running `ingestd run`. The destructor kills (SIGKILL) and reaps a process still running.
class daemon_process {
public:
  /// Starts test::ingestd_binary() with `args` (default "run"), the current environment plus
  /// `overrides`, stdin from /dev/null and stdout + stderr appended to `log_path`. Throws
  /// std::runtime_error when the binary cannot be started.
  daemon_process(const std::map<std::string, std::string>& overrides, std::string log_path,
                 std::vector<std::string> args = {"run"});
  ~daemon_process();
  daemon_process(const daemon_process&) = delete;
  daemon_process& operator=(const daemon_process&) = delete;

  pid_t pid() const { return pid_; }
  /// Sends `sig` (no-op once the process was reaped).
  void signal(int sig);
  /// true while the process has not exited.
  bool running();
  /// Waits up to `deadline` for the exit; the exit code, 128 + signal number when killed by a
  /// signal, nullopt when still running at the deadline.
  std::optional<int> wait_exit(std::chrono::milliseconds deadline);
  /// Waits up to `deadline` for the process's first log line (so it is past loading its libraries
  /// and handles its signals itself); false at the deadline or when it exited first.
  bool wait_started(std::chrono::milliseconds deadline);
  /// What the process wrote so far (its JSON log lines).
  std::string log() const;
  /// The last `lines` lines of the log, for failure messages.
  std::string log_tail(size_t lines = 60) const;
  const std::string& log_path() const { return log_path_; }

private:
  bool reap(bool block);

  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::string log_path_;
};

/// Polls `condition` every `interval` until it returns true or `deadline` passes; returns the
/// last answer. For database conditions: no guessed sleeps.
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds deadline,
                std::chrono::milliseconds interval = std::chrono::milliseconds{50});

} // namespace ingestd::test
