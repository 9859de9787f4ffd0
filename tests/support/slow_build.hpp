// For the bounds that tests put on how long code runs: the calling thread's CPU time (not the
// wall clock, which a busy machine stretches) and how many times slower this build runs code.
#pragma once

#include <time.h>

#include <chrono>

namespace ingestd::test {

/// The CPU time the calling thread has used.
inline std::chrono::nanoseconds thread_cpu_time() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds{ts.tv_sec} + std::chrono::nanoseconds{ts.tv_nsec};
}

/// 1 in the normal builds; 10 in the sanitizer build (preset sanitize), where ASan, UBSan,
/// libstdc++'s assertions and the fuzzer's coverage instrumentation make code such as std::regex
/// about ten times slower.
constexpr int build_slowdown() {
#if defined(__SANITIZE_ADDRESS__)
  return 10;
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
  return 10;
#  else
  return 1;
#  endif
#else
  return 1;
#endif
}

} // namespace ingestd::test
