// The decoder helper process: its main loop, its handlers and its sandbox. helper_pool starts it
// as `<program> decoder [options]` (the ingestd binary's hidden subcommand, app/main.cpp), with
// its limits set and an environment of one constant variable; here it
//   1. loads what its handlers need (Tesseract's language data, the libraries' tables),
//   2. empties its environment and installs its seccomp filter (sandbox.hpp), then
//   3. answers `ready` and serves requests on fd 3 (requests) and fd 4 (answers) until fd 3
//      closes. Its own stdin, stdout and stderr are /dev/null (stderr stays open under ASan).
// A failed allocation ends it with exit_out_of_memory; the pool names that decode.out_of_memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "adapters/ocr/ocr_options.hpp"
#include "adapters/sandbox/protocol.hpp"
#include "messages/result.hpp"

namespace ingestd::sandbox {

/// The helper's file descriptors for the protocol.
inline constexpr int request_fd = 3;
inline constexpr int answer_fd = 4;
/// Exit codes the pool reads: a failed allocation, a start that could not install the sandbox.
inline constexpr int exit_out_of_memory = 86;
inline constexpr int exit_startup_failed = 87;

/// True in a build with AddressSanitizer (the sanitize preset). ASan reserves terabytes of
/// address space for its shadow memory, which RLIMIT_AS refuses, so there the pool bounds a
/// helper's memory with ASan's own allocator limits (sanitizer_options) and the helper turns
/// ASan's out-of-memory reports into exit_out_of_memory.
#if defined(__SANITIZE_ADDRESS__)
#  define INGESTD_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define INGESTD_ADDRESS_SANITIZER 1
#  endif
#endif
#ifndef INGESTD_ADDRESS_SANITIZER
#  define INGESTD_ADDRESS_SANITIZER 0
#endif
inline constexpr bool address_sanitizer = INGESTD_ADDRESS_SANITIZER != 0;

/// The ASAN_OPTIONS variable a helper starts with in an AddressSanitizer build (empty in any
/// other): allocations fail past memory_limit_bytes (one allocation, or the resident set), a
/// crash ends it by its signal, and no leak check at exit (it needs a process the seccomp filter
/// refuses).
std::string sanitizer_options(uint64_t memory_limit_bytes);

/// What the helper is started with (its command-line options, written by helper_pool).
struct helper_settings {
  uint32_t max_frame_bytes = 64u << 20;
  /// Tesseract's languages and data to load before the sandbox is installed.
  tesseract_settings tesseract;
  /// CPU seconds after which the helper retires (the pool starts another); a request's own CPU
  /// budget is its timeout plus cpu_margin_seconds, enforced by RLIMIT_CPU's soft limit.
  uint32_t retire_cpu_seconds = 1800;
  uint32_t cpu_margin_seconds = 5;
};

/// The command-line options of `settings` (after the subcommand), and back.
std::vector<std::string> helper_arguments(const helper_settings& settings);
result<helper_settings> parse_helper_arguments(int argc, char** argv, int first);

/// A handler answers one kind: the body of an ok answer, or an error. Its deadline is the
/// request's timeout from when it arrived. It may move the request's bytes away.
using handler = std::function<result<std::string>(request& req,
                                                  std::chrono::steady_clock::time_point deadline)>;

struct handler_table {
  std::map<uint8_t, handler> handlers;
  /// Runs before the sandbox is installed: load files, initialise libraries.
  std::function<void(const helper_settings&)> warm_up;
};

/// The helper's main: the steps above. Returns its exit code (0 when its input closed or it
/// retired).
int helper_main(const helper_settings& settings, const handler_table& table);

/// Called by a handler whose library may leave memory behind (libpst): the helper retires after
/// this request's answer, and a fresh one serves the next.
void retire_after_this_request();

/// Marks the process as out of memory and ends it (exit_out_of_memory): what a failed
/// allocation calls, from operator new's handler or a library's error hook.
[[noreturn]] void out_of_memory_exit();

} // namespace ingestd::sandbox
