// Deferred callbacks for adapters that wait without blocking (LLM retry back-off): `after` returns
// at once and runs the task later on the implementation's thread. The HTTP engine implements it
// (adapters/http/curl_engine.hpp), so a retry runs where its request is submitted.
#pragma once

#include <chrono>
#include <functional>

namespace ingestd {

/// Runs a task once after a delay. Tasks must be short and must not block (they typically submit
/// an HTTP request or send a message). A task still pending when the timer shuts down is
/// destroyed without running: owners that must answer exactly once do so from the task's
/// destructor (see openai_extractor).
class timer {
public:
  virtual ~timer() = default;
  virtual void after(std::chrono::milliseconds delay, std::function<void()> task) = 0;
};

} // namespace ingestd
