// Where adapters run CPU-heavy work (OCR, OpenCV): the actor layer's CPU pool in the daemon, a
// plain thread in unit tests. Keeps adapters free of CAF and off CAF's scheduler threads.
#pragma once

#include <chrono>
#include <functional>

namespace ingestd {

struct cpu_job {
  /// The work; called on a worker thread.
  std::function<void()> run;
  /// Called instead of `run` when the deadline passes before a worker is free, or the backlog
  /// is full. Exactly one of `run` and `expired` is called.
  std::function<void()> expired;
  std::chrono::steady_clock::time_point deadline;
};

class cpu_executor {
public:
  virtual ~cpu_executor() = default;
  virtual void submit(cpu_job job) = 0;
};

} // namespace ingestd
