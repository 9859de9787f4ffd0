// The extraction port: structured invoice data from transcription text.
// Implemented by the local rule-based extractor and the OpenAI-compatible LLM client.
#pragma once

#include <string>
#include <utility>

#include "messages/call_context.hpp"
#include "messages/extraction.hpp"
#include "messages/result.hpp"

namespace ingestd {

/// Asynchronous: returns at once, calls `done` exactly once, possibly from another thread.
class extractor {
public:
  virtual ~extractor() = default;
  virtual void extract(std::string text, callback<extraction> done) = 0;
  /// extract() with the caller's call context: its hooks hear when the request waits for its
  /// provider's limits and when it goes on (a job's step deadline stops in between), its log
  /// fields go on every line about the call. An extractor without a remote provider ignores it.
  // NOLINTNEXTLINE(performance-unnecessary-value-param): the overrides take the context over.
  virtual void extract_with(std::string text, call_context /*context*/, callback<extraction> done) {
    extract(std::move(text), std::move(done));
  }
  virtual std::string name() const = 0;
  /// True when the same text always gives the same extraction (the local rules): retrying a
  /// verdict of the quality gate cannot change it.
  virtual bool deterministic() const { return false; }
  /// True when extract() does its work inline, on the caller's thread, before it returns (the
  /// local rules): the job runs it on the CPU pool rather than on a scheduler thread.
  virtual bool runs_inline() const { return false; }
};

} // namespace ingestd
