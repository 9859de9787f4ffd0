// The pool of decoder helper processes that a node (or a one-document command) starts: long-lived
// processes that parse and render outside bytes so that the daemon never does.
//
//   call ──► a free helper (none by the deadline: ocr.busy) ──► not started or not ready yet:
//            start it, wait for its `ready` ──► send the request ──► wait for the answer until the
//            deadline plus the grace
//   answer ──► the body, or the handler's error (checked: only the codes a handler may answer)
//   the helper died (a signal, an exit), broke the protocol, or overran ──► killed if need be,
//            reaped, its cause named (decode.crashed, decode.out_of_memory, decode.timeout) for
//            this one request, and a new helper started in its place
//
// Each helper runs `command` (by default this very program's `decoder` subcommand) in its own
// process group, with stdin/stdout/stderr on /dev/null, the protocol on fds 3 and 4, the
// environment OMP_THREAD_LIMIT=1 alone (the helper empties even that once libgomp has read it),
// and these limits set between fork and exec: RLIMIT_AS (memory_limit_bytes), RLIMIT_CPU
// (cpu_limit_seconds, hard; the helper lowers the soft limit to each request's budget and retires
// at half), RLIMIT_CORE 0, RLIMIT_FSIZE 0, RLIMIT_NOFILE 256. In an AddressSanitizer build the
// memory bound is ASan's instead of RLIMIT_AS, and stderr stays open (helper.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <vector>

#include "adapters/sandbox/decoder.hpp"
#include "adapters/sandbox/helper.hpp"

namespace ingestd::sandbox {

struct helper_pool_options {
  /// The helper's program and its arguments before the options (helper_arguments()).
  std::vector<std::string> command = {"/proc/self/exe", "decoder"};
  /// Helpers in the pool: one per thread that calls it at once (the CPU pool's workers).
  int helpers = 1;
  helper_settings settings;
  /// RLIMIT_AS of each helper.
  uint64_t memory_limit_bytes = uint64_t{3} << 30;
  /// RLIMIT_CPU's hard limit of each helper (its life's CPU time; it retires at half of it).
  uint32_t cpu_limit_seconds = 7200;
  /// How long past a request's deadline a helper may take to answer before it is killed (the
  /// helper stops Tesseract at the deadline itself and answers ocr.deadline).
  std::chrono::milliseconds grace{2000};
  /// How long a new helper may take to load its data and answer `ready`.
  std::chrono::milliseconds start_timeout{60'000};
};

struct helper_pool_stats {
  uint64_t started = 0;
  uint64_t crashed = 0;
  uint64_t out_of_memory = 0;
  uint64_t timed_out = 0;
  uint64_t retired = 0;
};

class helper_pool final : public decoder {
public:
  /// Starts the helpers (they load their data in parallel; the first call waits for its one).
  explicit helper_pool(helper_pool_options options);
  /// Closes every helper's input, kills and reaps them. No call may be in flight.
  ~helper_pool() override;

  helper_pool(const helper_pool&) = delete;
  helper_pool& operator=(const helper_pool&) = delete;

  using decoder::call;
  result<std::string> call(const request_view& req, clock_type::time_point deadline,
                           std::stop_token stop) override;

  helper_pool_stats stats() const;
  /// The helpers' process ids (0: not running), for tests and logs.
  std::vector<pid_t> pids() const;
  const helper_pool_options& options() const { return options_; }

private:
  struct helper {
    pid_t pid = 0;
    int to = -1;   ///< its requests (our write end)
    int from = -1; ///< its answers (our read end)
    bool ready = false;
    bool busy = false;
    clock_type::time_point started_at;
  };

  /// Why a helper is ended: it died by itself (its exit status tells how), it overran the
  /// deadline (killed: decode.timeout), it broke the protocol (killed: decode.crashed), or its
  /// caller stopped the call (killed: decode.cancelled, no crash counted).
  enum class ending { died, overran, misbehaved, stopped };

  result<void> start(helper& h);
  /// Kills (unless it died) and reaps the helper; the cause of its end as the request's error.
  error end(helper& h, ending how, std::string_view why);
  void close_pipes(helper& h);
  result<std::string> exchange(helper& h, const request_view& req, clock_type::time_point deadline,
                               const std::stop_token& stop);

  helper_pool_options options_;
  mutable std::mutex mtx_;
  std::condition_variable free_;
  std::vector<helper> helpers_;
  std::atomic<uint64_t> started_{0}, crashed_{0}, out_of_memory_{0}, timed_out_{0}, retired_{0};
};

/// The pool's options for a node or a command: `helpers` helpers of this program, frames big
/// enough for `max_document_bytes` and for answers of `max_answer_bytes`.
helper_pool_options default_pool_options(int helpers, const tesseract_settings& tesseract,
                                         uint64_t max_document_bytes, uint64_t max_answer_bytes);

} // namespace ingestd::sandbox
