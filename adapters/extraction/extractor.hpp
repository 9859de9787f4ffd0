// The extraction port (seed 000 steps 8-9): structured invoice data from transcription text.
// Implemented by the local rule-based extractor and the OpenAI-compatible LLM client.
#pragma once

#include <string>

#include "messages/extraction.hpp"
#include "messages/result.hpp"

namespace ingestd {

/// Asynchronous: returns at once, calls `done` exactly once, possibly from another thread.
class extractor {
public:
  virtual ~extractor() = default;
  virtual void extract(std::string text, callback<extraction> done) = 0;
  virtual std::string name() const = 0;
};

} // namespace ingestd
