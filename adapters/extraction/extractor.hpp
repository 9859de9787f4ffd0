// The extraction port (seed 000 steps 8-9): structured invoice data from transcription text.
// Implemented by the local rule-based extractor and the OpenAI-compatible LLM client.
#pragma once

#include <string>
#include <utility>

#include "messages/extraction.hpp"
#include "messages/result.hpp"
#include "messages/wait_hooks.hpp"

namespace ingestd {

/// Asynchronous: returns at once, calls `done` exactly once, possibly from another thread.
class extractor {
public:
  virtual ~extractor() = default;
  virtual void extract(std::string text, callback<extraction> done) = 0;
  /// extract() for a caller whose deadline must not run while the request waits for its
  /// provider's limits: `hooks` hear when it waits and when it goes on. An extractor without a
  /// remote provider ignores them.
  virtual void extract_with(std::string text, wait_hooks hooks, callback<extraction> done) {
    (void) hooks;
    extract(std::move(text), std::move(done));
  }
  virtual std::string name() const = 0;
  /// True when the same text always gives the same extraction (the local rules): retrying a
  /// verdict of the quality gate cannot change it (seed 000's outcome table).
  virtual bool deterministic() const { return false; }
  /// True when extract() does its work inline, on the caller's thread, before it returns (the
  /// local rules): the job runs it on the CPU pool rather than on a scheduler thread.
  virtual bool runs_inline() const { return false; }
};

} // namespace ingestd
