// The decoder helper pool (helper_pool.hpp).
#include "adapters/sandbox/helper_pool.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <optional>
#include <stop_token>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adapters/support/log.hpp"
#include "messages/error_codes.hpp"

namespace ingestd::sandbox {

namespace {

/// A handler may answer these codes (its libraries' verdicts on the document); anything else,
/// or a claim_lost class, comes from a helper that is not behaving.
bool allowed_error(const error& e) {
  if (e.claim_lost() || never_started(e))
    return false;
  for (std::string_view prefix : {"ocr.", "container.", "review.", "decode."})
    if (e.code.rfind(prefix, 0) == 0)
      return true;
  return false;
}

error no_helper(std::string why) {
  return error::make_transient(errc::ocr_busy, "no decoder helper: " + std::move(why));
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void ignore_sigpipe() {
  // A helper that dies while a request is written must give EPIPE, not end this process.
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
    ::signal(SIGPIPE, SIG_IGN);
}

std::string signal_name(int sig) {
  const char* name = ::sigabbrev_np(sig);
  return name ? std::string{"SIG"} + name : "signal " + std::to_string(sig);
}

} // namespace

helper_pool_options default_pool_options(int helpers, const tesseract_settings& tesseract,
                                         uint64_t max_document_bytes, uint64_t max_answer_bytes) {
  helper_pool_options o;
  o.helpers = std::max(helpers, 1);
  o.settings.tesseract = tesseract;
  // The larger of a request (the document and its parameters) and an answer, with room for the
  // encoding's own fields.
  auto frame = std::max(max_document_bytes, max_answer_bytes) + (uint64_t{4} << 20);
  o.settings.max_frame_bytes = static_cast<uint32_t>(std::min<uint64_t>(frame, UINT32_MAX - 1));
  return o;
}

helper_pool::helper_pool(helper_pool_options options) : options_(std::move(options)) {
  ignore_sigpipe();
  helpers_.resize(static_cast<size_t>(std::max(options_.helpers, 1)));
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& h : helpers_)
    if (auto started = start(h); !started)
      log::warn("a decoder helper could not be started; the next call tries again",
                {{"error", started.error().describe()}});
}

helper_pool::~helper_pool() {
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& h : helpers_)
    if (h.pid > 0) {
      ::kill(h.pid, SIGKILL);
      int status = 0;
      while (::waitpid(h.pid, &status, 0) < 0 && errno == EINTR) {
      }
      close_pipes(h);
      h.pid = 0;
    }
}

void helper_pool::close_pipes(helper& h) {
  if (h.to >= 0)
    ::close(h.to);
  if (h.from >= 0)
    ::close(h.from);
  h.to = h.from = -1;
  h.ready = false;
}

result<void> helper_pool::start(helper& h) {
  // Everything the child needs is made before fork: between fork and exec it calls only
  // async-signal-safe functions.
  std::vector<std::string> args = options_.command;
  for (auto& a : helper_arguments(options_.settings))
    args.push_back(a);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  // libgomp reads its limit when the program loads; the helper clears its environment after.
  std::string omp = "OMP_THREAD_LIMIT=1";
  std::string asan = sanitizer_options(options_.memory_limit_bytes);
  char* envp[] = {omp.data(), asan.empty() ? nullptr : asan.data(), nullptr};
  rlimit as{options_.memory_limit_bytes, options_.memory_limit_bytes};
  rlimit cpu{options_.cpu_limit_seconds, options_.cpu_limit_seconds};
  rlimit none{0, 0};
  rlimit files{256, 256};

  int req[2], ans[2];
  if (::pipe2(req, O_CLOEXEC) != 0)
    return no_helper(std::string{"pipe: "} + std::strerror(errno));
  if (::pipe2(ans, O_CLOEXEC) != 0) {
    ::close(req[0]);
    ::close(req[1]);
    return no_helper(std::string{"pipe: "} + std::strerror(errno));
  }
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  pid_t pid = devnull < 0 ? -1 : ::fork();
  if (pid == 0) {
    // The child. Its own process group: a terminal's Ctrl-C goes to the daemon, which drains.
    ::setpgid(0, 0);
    int r = ::fcntl(req[0], F_DUPFD, 10);
    int a = ::fcntl(ans[1], F_DUPFD, 10);
    int n = ::fcntl(devnull, F_DUPFD, 10);
    // Under ASan the helper's stderr stays the node's: its reports must reach the test's log.
    if (r < 0 || a < 0 || n < 0 || ::dup2(n, 0) < 0 || ::dup2(n, 1) < 0
        || (!address_sanitizer && ::dup2(n, 2) < 0) || ::dup2(r, request_fd) < 0
        || ::dup2(a, answer_fd) < 0)
      ::_exit(exit_startup_failed);
    if (::syscall(SYS_close_range, answer_fd + 1, ~0U, 0) != 0)
      for (int fd = answer_fd + 1; fd < 4096; ++fd)
        ::close(fd);
    if ((!address_sanitizer && ::setrlimit(RLIMIT_AS, &as) != 0)
        || ::setrlimit(RLIMIT_CPU, &cpu) != 0 || ::setrlimit(RLIMIT_CORE, &none) != 0
        || ::setrlimit(RLIMIT_FSIZE, &none) != 0 || ::setrlimit(RLIMIT_NOFILE, &files) != 0)
      ::_exit(exit_startup_failed);
    ::execve(argv[0], argv.data(), envp);
    ::_exit(exit_startup_failed);
  }
  auto fork_errno = errno;
  ::close(req[0]);
  ::close(ans[1]);
  if (devnull >= 0)
    ::close(devnull);
  if (pid < 0) {
    ::close(req[1]);
    ::close(ans[0]);
    return no_helper(std::string{"fork: "} + std::strerror(fork_errno));
  }
  h.pid = pid;
  h.to = req[1];
  h.from = ans[0];
  h.ready = false;
  h.started_at = clock_type::now();
  set_nonblocking(h.to);
  set_nonblocking(h.from);
  // Larger pipes: fewer wake-ups while a document's bytes go through (best effort).
  ::fcntl(h.to, F_SETPIPE_SZ, 1 << 20);
  ::fcntl(h.from, F_SETPIPE_SZ, 1 << 20);
  ++started_;
  return {};
}

error helper_pool::end(helper& h, ending how, std::string_view why) {
  bool kill = how != ending::died;
  if (kill)
    ::kill(h.pid, SIGKILL);
  int status = 0;
  pid_t reaped = 0;
  while ((reaped = ::waitpid(h.pid, &status, 0)) < 0 && errno == EINTR) {
  }
  auto pid = h.pid;
  close_pipes(h);
  h.pid = 0;
  error e;
  if (how == ending::stopped) {
    e = error::make_transient(errc::decode_cancelled, std::string{why});
    log::info("a decoder helper was stopped: its work was cancelled; another takes its place",
              {{"pid", std::to_string(pid)}});
    return e;
  }
  if (how == ending::overran) {
    ++timed_out_;
    e = error::make_transient(errc::decode_timeout, std::string{why});
  } else if (how == ending::misbehaved) {
    ++crashed_;
    e = error::make_transient(errc::decode_crashed, std::string{why});
  } else if (reaped == pid && WIFEXITED(status) && WEXITSTATUS(status) == exit_out_of_memory) {
    ++out_of_memory_;
    e = error::make_transient(errc::decode_out_of_memory,
                              "the decoder helper ran out of its memory limit ("
                                  + std::to_string(options_.memory_limit_bytes >> 20)
                                  + " MiB) on the document");
  } else if (reaped == pid && WIFSIGNALED(status)
             && (WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGKILL)) {
    // SIGXCPU at the request's CPU budget, SIGKILL at the helper's hard limit (no one else
    // kills it: it is a process group of its own that only this pool signals).
    ++timed_out_;
    e = error::make_transient(errc::decode_timeout,
                              "the decoder helper overran its CPU-time limit ("
                                  + signal_name(WTERMSIG(status)) + ")");
  } else {
    ++crashed_;
    std::string how = reaped != pid         ? "an unknown way"
                      : WIFSIGNALED(status) ? signal_name(WTERMSIG(status))
                      : WIFEXITED(status)   ? "exit code " + std::to_string(WEXITSTATUS(status))
                                            : "an unknown way";
    e = error::make_transient(errc::decode_crashed, std::string{why} + " (" + how + ")");
  }
  log::warn("a decoder helper ended on a document; another takes its place",
            {{"pid", std::to_string(pid)}, {"error", e.describe()}});
  return e;
}

result<std::string> helper_pool::exchange(helper& h, const request_view& req,
                                          clock_type::time_point deadline,
                                          const std::stop_token& stop) {
  const auto max = options_.settings.max_frame_bytes;
  std::string frame;
  if (!h.ready) {
    auto give_up = h.started_at + options_.start_timeout;
    auto got = read_frame(h.from, max, frame, std::min(deadline, give_up));
    if (got == io_status::timeout && clock_type::now() < give_up)
      return no_helper("a new helper was not ready before the deadline"); // it goes on starting
    if (got == io_status::timeout) {
      end(h, ending::misbehaved, "a new helper did not start in time");
      return no_helper("a new helper did not start in time");
    }
    auto a = got == io_status::ok ? decode_answer(frame) : result<answer>{error{}};
    if (!a || a->status != answer_status::ready) {
      auto e = end(h, got == io_status::ok ? ending::misbehaved : ending::died,
                   "a new helper did not start");
      return no_helper(e.message);
    }
    h.ready = true;
  }
  auto kill_at = deadline + options_.grace;
  if (stop.stop_requested())
    return error::make_transient(errc::decode_cancelled, "the work was cancelled");
  io_status sent = io_status::ok;
  io_status got = io_status::ok;
  {
    // A stop kills the helper: its pipes break and the exchange below returns at once. The
    // callback is gone (and done) before the helper is reaped, so its pid is still the helper's.
    std::optional<std::stop_callback<std::function<void()>>> on_stop;
    if (stop.stop_possible())
      on_stop.emplace(stop, std::function<void()>{[pid = h.pid] { ::kill(pid, SIGKILL); }});
    sent = write_request(h.to, req, max, kill_at);
    if (sent == io_status::ok)
      got = read_frame(h.from, max, frame, kill_at);
  }
  if (stop.stop_requested())
    return end(h, ending::stopped, "the work was cancelled while the decoder helper ran");
  if (sent == io_status::too_large)
    return error::make_permanent("ocr.too_large", "the document does not fit a decoder request ("
                                                      + std::to_string(max) + " bytes at most)");
  if (sent == io_status::timeout)
    return end(h, ending::overran,
               "the decoder helper did not take the document before its deadline");
  if (sent != io_status::ok)
    return end(h, ending::died, "the decoder helper died while it was sent the document");
  if (got == io_status::timeout)
    return end(h, ending::overran, "the decoder helper overran the deadline and was killed");
  if (got == io_status::too_large)
    return end(h, ending::misbehaved, "the decoder helper's answer broke the protocol");
  if (got != io_status::ok)
    return end(h, ending::died, "the decoder helper died on the document");
  auto a = decode_answer(frame);
  if (!a || a->status == answer_status::ready
      || (a->status == answer_status::error && !allowed_error(a->err)))
    return end(h, ending::misbehaved, "the decoder helper's answer broke the protocol");
  if (a->retiring) {
    int status = 0;
    while (::waitpid(h.pid, &status, 0) < 0 && errno == EINTR) {
    }
    close_pipes(h);
    h.pid = 0;
    ++retired_;
  }
  if (a->status == answer_status::error)
    return std::move(a->err);
  return std::move(a->body);
}

result<std::string> helper_pool::call(const request_view& req, clock_type::time_point deadline,
                                      std::stop_token stop) {
  size_t index = 0;
  {
    std::unique_lock<std::mutex> lock{mtx_};
    auto pick = [this, &index] {
      // A ready helper first, then one that is starting, then a slot to start one in.
      size_t best = helpers_.size();
      int best_rank = 3;
      for (size_t i = 0; i < helpers_.size(); ++i) {
        auto& h = helpers_[i];
        if (h.busy)
          continue;
        int rank = h.ready ? 0 : h.pid > 0 ? 1 : 2;
        if (rank < best_rank)
          best = i, best_rank = rank;
      }
      index = best;
      return best < helpers_.size();
    };
    if (!free_.wait_until(lock, deadline, pick))
      return no_helper("every helper was busy until the deadline");
    helpers_[index].busy = true;
  }
  // The helper is this thread's until it is given back: no lock while it works.
  auto& h = helpers_[index];
  result<std::string> out = error{};
  if (h.pid == 0) {
    if (auto started = start(h); !started)
      out = started.error();
  }
  if (h.pid > 0)
    out = exchange(h, req, deadline, stop);
  // A helper that ended is replaced at once, so that it loads while others work.
  if (h.pid == 0)
    if (auto started = start(h); !started)
      log::warn("a decoder helper could not be started; the next call tries again",
                {{"error", started.error().describe()}});
  {
    std::lock_guard<std::mutex> guard{mtx_};
    h.busy = false;
  }
  free_.notify_one();
  return out;
}

helper_pool_stats helper_pool::stats() const {
  return {started_.load(), crashed_.load(), out_of_memory_.load(), timed_out_.load(),
          retired_.load()};
}

std::vector<pid_t> helper_pool::pids() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<pid_t> out;
  for (auto& h : helpers_)
    out.push_back(h.pid);
  return out;
}

} // namespace ingestd::sandbox
