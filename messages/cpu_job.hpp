// One unit of CPU-heavy work (OCR, OpenCV) with its deadline: what an adapter hands to a
// cpu_executor and what the actor layer's CPU pool receives as a message.
#pragma once

#include <chrono>
#include <functional>

namespace ingestd {

/// Work with a deadline, run by a cpu_executor (adapters) or the CPU pool (actors).
struct cpu_job {
  /// The work; called on a worker thread.
  std::function<void()> run;
  /// Called instead of `run` when the deadline passes before a worker is free, or the backlog
  /// is full. Exactly one of `run` and `expired` is called.
  std::function<void()> expired;
  std::chrono::steady_clock::time_point deadline;
  /// Part of work already started (a page of an opened document): it waits ahead of new work,
  /// so a started document finishes before others begin.
  bool continues_started_work = false;
};

} // namespace ingestd
