// The OpenAI-compatible chat-completions extractor (OpenAI, Azure OpenAI, vLLM, llama.cpp server,
// Ollama): asks for the invoice schema in strict json_schema mode through chat_client (the shared
// call with its retries and error classification).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "adapters/extraction/chat_completion.hpp"
#include "adapters/extraction/extractor.hpp"
#include "adapters/http/http_client.hpp"
#include "adapters/support/timer.hpp"

namespace ingestd {

/// chat_options (connection, model, retries) and the extraction's prompt.
struct openai_options : chat_options {
  /// Empty: the built-in prompt.
  std::string system_prompt;
};

/// Counters for tests and metrics.
using openai_stats = chat_stats;

class openai_extractor final : public extractor {
public:
  /// `http` and `retry_timer` must outlive every extract() call in flight.
  openai_extractor(http_client& http, timer& retry_timer, openai_options opts);
  ~openai_extractor() override;

  /// Calls `done` exactly once: with the validated extraction (tokens summed over all attempts),
  /// or with the last attempt's classified error, whose message says how many attempts ran.
  void extract(std::string text, callback<extraction> done) override;
  void extract_with(std::string text, call_context context, callback<extraction> done) override;
  std::string name() const override { return "openai"; }

  /// Requests sent and retries scheduled so far (all extract() calls together).
  openai_stats stats() const;

private:
  std::shared_ptr<const std::string> system_prompt_;
  chat_client client_;
};

/// The request body for `text` (exposed for tests).
std::string build_chat_request(const openai_options& opts, std::string_view text);

/// One HTTP exchange's outcome, classified (exposed for tests): the extraction, or an error
/// whose class decides retrying. Tokens and model are filled when the response reports them,
/// also on failure (a truncated answer still costs tokens) via `usage_out`.
result<extraction> parse_chat_response(const http_response& response, const openai_options& opts,
                                       extraction* usage_out = nullptr);

} // namespace ingestd
