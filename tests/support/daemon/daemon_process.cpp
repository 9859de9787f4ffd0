// Starts, signals and reaps `ingestd run` for the end-to-end tests (fork + execve), with its
// output in a file the tests print when they fail.
#include "tests/support/daemon/daemon_process.hpp"

#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/environment.hpp"

extern char** environ;

namespace ingestd::test {

daemon_process::daemon_process(const std::map<std::string, std::string>& overrides,
                               std::string log_path, std::vector<std::string> args)
    : log_path_(std::move(log_path)) {
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv{*e};
    auto eq = kv.find('=');
    if (eq != std::string::npos)
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : overrides)
    env[k] = v;
  std::vector<std::string> env_strings;
  env_strings.reserve(env.size());
  for (const auto& [k, v] : env)
    env_strings.push_back(std::string{k}.append("=").append(v));
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& s : env_strings)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string binary = ingestd_binary();
  std::vector<std::string> argv_strings{"ingestd"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_strings.size() + 1);
  for (auto& s : argv_strings)
    argv.push_back(s.data());
  argv.push_back(nullptr);

  int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0)
    throw std::runtime_error("cannot open " + log_path_ + ": " + std::strerror(errno));
  if (::access(binary.c_str(), X_OK) != 0) {
    ::close(log_fd);
    throw std::runtime_error("ingestd binary not executable: '" + binary
                             + "' (INGESTD_BINARY is set by CTest)");
  }
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(log_fd);
    throw std::runtime_error(std::string{"fork: "} + std::strerror(errno));
  }
  if (pid_ == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execve(binary.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(log_fd);
}

daemon_process::~daemon_process() {
  if (pid_ > 0 && !exit_code_) {
    ::kill(pid_, SIGKILL);
    reap(true);
  }
}

void daemon_process::signal(int sig) {
  if (pid_ > 0 && !exit_code_ && !reap(false))
    ::kill(pid_, sig);
}

bool daemon_process::reap(bool block) {
  if (exit_code_)
    return true;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (r != pid_)
    return false;
  if (WIFEXITED(status))
    exit_code_ = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    exit_code_ = 128 + WTERMSIG(status);
  else
    exit_code_ = -1;
  return true;
}

bool daemon_process::running() {
  return !reap(false);
}

std::optional<int> daemon_process::wait_exit(std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (!reap(false)) {
    if (std::chrono::steady_clock::now() >= until)
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  return exit_code_;
}

bool daemon_process::wait_started(std::chrono::milliseconds deadline) {
  return wait_until([&] { return !log().empty() || !running(); }, deadline) && running();
}

std::string daemon_process::log() const {
  std::ifstream in{log_path_};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string daemon_process::log_tail(size_t lines) const {
  auto text = log();
  size_t pos = text.size();
  for (size_t n = 0; n <= lines && pos > 0; ++n) {
    auto p = text.rfind('\n', pos - 1);
    if (p == std::string::npos) {
      pos = 0;
      break;
    }
    pos = p;
  }
  return "--- " + log_path_ + " (tail) ---\n" + text.substr(pos) + "\n---";
}

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds deadline,
                std::chrono::milliseconds interval) {
  auto until = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    if (condition())
      return true;
    if (std::chrono::steady_clock::now() >= until)
      return condition();
    std::this_thread::sleep_for(interval);
  }
}

} // namespace ingestd::test
