// The match decision port: given a document and its candidates, which of them does it
// belong with, and how. Implemented by local_matcher (rules, the embedded default) and
// llm_matcher (an OpenAI-compatible chat model answering in a JSON schema).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "messages/call_context.hpp"
#include "messages/matching.hpp"
#include "messages/result.hpp"

namespace ingestd {

/// Asynchronous: decide() returns at once or after deciding, and calls its callback exactly once.
/// No silent degradation: a decision that could not be made is an error, never an
/// empty list. Errors are classified: transient (HTTP 429, 5xx, timeout, connection refused, an
/// unparseable or schema-invalid answer) or permanent (HTTP 400 context window exceeded, 401,
/// 403).
class matcher {
public:
  virtual ~matcher() = default;

  /// The edges from `doc` to any of `candidates` (each `other` is a candidate's id; a candidate
  /// appears at most once). An empty vector is a real answer: no match.
  virtual void decide(match_document doc, std::vector<match_document> candidates,
                      callback<std::vector<match_edge>> done)
      = 0;
  /// decide() with the caller's call context (see extractor::extract_with); a local matcher
  /// ignores it.
  // The overrides take the context over, hence by value.
  virtual void decide_with(match_document doc, std::vector<match_document> candidates,
                           call_context /*context*/, // NOLINT(performance-unnecessary-value-param)
                           callback<std::vector<match_edge>> done) {
    decide(std::move(doc), std::move(candidates), std::move(done));
  }

  /// "local" or "llm", for logs.
  virtual std::string name() const = 0;

  /// True when decide() does its work on the caller's thread and answers before it returns (the
  /// rules): the caller runs it on a CPU worker.
  virtual bool runs_inline() const { return false; }
};

} // namespace ingestd
