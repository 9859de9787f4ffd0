// The LLM match decision (matching.provider = llm): an OpenAI-compatible chat model is shown the
// document and its candidates and answers in a strict JSON schema; the answer is validated and
// the call retried with back-off on transient errors (chat_client).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/extraction/chat_completion.hpp"
#include "adapters/http/http_client.hpp"
#include "adapters/matching/matcher.hpp"
#include "adapters/support/timer.hpp"

namespace ingestd {

/// chat_options (connection, model, retries: 3 attempts, 2 s -> 4 s -> 8 s with jitter) and the
/// match decision's own settings. quota_is_permanent is false: matching classifies every HTTP
/// 429 as transient, a quota message too.
struct llm_matcher_options : chat_options {
  llm_matcher_options() { quota_is_permanent = false; }
  /// Empty: the built-in prompt.
  std::string system_prompt;
  /// Candidates beyond this many (retrieval ranks them best first) are not shown to the model.
  size_t max_candidates = 20;
  /// Bytes of each document's searchable text shown to the model (the structured data is shown
  /// whole, cut at 4 kB); the matched document gets four times as much.
  size_t text_excerpt_bytes = 1'500;
  /// Edges the model gives below this confidence are dropped (they are not errors).
  double min_confidence = 0.5;
};

/// Asks the model; calls `done` exactly once with the validated edges (an empty list only when
/// the model answered {"matches": []} or there were no candidates; then no request is sent), or
/// with the classified error: "llm.invalid_json" / "llm.schema_invalid" (transient, after the
/// retries) for an answer it cannot use, the HTTP and transport classes of chat_client.
class llm_matcher final : public matcher {
public:
  /// `http` and `retry_timer` must outlive every decide() call in flight.
  llm_matcher(http_client& http, timer& retry_timer, llm_matcher_options opts);
  ~llm_matcher() override;

  void decide_with(match_document doc, std::vector<match_document> candidates, call_context context,
                   callback<std::vector<match_edge>> done) override;
  void decide(match_document doc, std::vector<match_document> candidates,
              callback<std::vector<match_edge>> done) override;
  std::string name() const override { return "llm"; }

  /// Requests sent and retries scheduled so far.
  chat_stats stats() const;

private:
  llm_matcher_options opts_;
  chat_client client_;
};

/// The answer's JSON schema (strict mode): {"matches":[{"document_id","kind","confidence",
/// "reason"}]}, kind one of match_kind.
std::string_view match_decision_schema_json();

/// The prompt for `doc` and `candidates` (exposed for tests): the user message is one JSON
/// object {"document": {...}, "candidates": [{"document_id": ..., ...}]}.
chat_prompt build_match_prompt(const llm_matcher_options& opts, const match_document& doc,
                               const std::vector<match_document>& candidates);

/// Reads and validates the model's answer against the schema and the candidates (exposed for
/// tests): "llm.invalid_json" when it is not JSON, "llm.schema_invalid" when it does not follow
/// the schema or names a document that is not a candidate, a kind that is not one of
/// match_kind, or a confidence outside 0..1; both transient. A candidate named twice keeps its
/// strongest edge. Edges below `min_confidence` are dropped.
result<std::vector<match_edge>> parse_match_answer(std::string_view content,
                                                   const std::vector<match_document>& candidates,
                                                   double min_confidence = 0);

} // namespace ingestd
