// The OpenAI-compatible chat-completions extractor (OpenAI, Azure OpenAI, vLLM, llama.cpp server,
// Ollama): asks for the invoice schema in strict json_schema mode over the http_client port.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "adapters/http/http_client.hpp"
#include "adapters/llm/extractor.hpp"
#include "adapters/support/timer.hpp"

namespace ingestd {

struct openai_options {
  /// Without the trailing "/v1" (a "/v1" suffix is accepted too): requests go to
  /// {base_url}/v1/chat/completions.
  std::string base_url = "https://api.openai.com";
  /// Sent as "Authorization: Bearer ..." when not empty; never logged. The daemon reads it from
  /// INGESTD_LLM_API_KEY.
  std::string api_key;
  std::string model = "gpt-4o-mini";
  /// Empty: the built-in prompt.
  std::string system_prompt;
  /// Omitted from the request when negative (some reasoning models refuse it).
  double temperature = 0;
  /// Sent as max_tokens when positive.
  int max_output_tokens = 0;
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds request_timeout{120'000};
  /// Attempts per extract() call, the first included (seed 003: 3).
  int max_attempts = 3;
  /// Wait before the second attempt; doubles for each later one (2 s -> 4 s -> 8 s).
  std::chrono::milliseconds base_backoff{2'000};
  /// Each wait is multiplied by a random factor in [1 - jitter, 1 + jitter].
  double jitter = 0.25;
  /// A server-requested wait (retry-after-ms, Retry-After) longer than this is not waited out
  /// in process: the error goes to the pipeline at once with retry_after_ms set, so the queue's
  /// back-off can honour it.
  std::chrono::milliseconds max_retry_after{120'000};
  /// A refusal (null content, "refusal" set) is transient by default: models refuse invoices
  /// only spuriously, and a retry is bounded by max_attempts anyway. True makes it permanent.
  bool refusal_is_permanent = false;
};

/// Counters for tests and metrics.
struct openai_stats {
  uint64_t requests = 0;
  uint64_t retries = 0;
};

class openai_extractor final : public extractor {
public:
  /// `http` and `retry_timer` must outlive every extract() call in flight.
  openai_extractor(http_client& http, timer& retry_timer, openai_options opts);
  ~openai_extractor() override;

  /// Calls `done` exactly once: with the validated extraction (tokens summed over all attempts),
  /// or with the last attempt's classified error, whose message says how many attempts ran.
  void extract(std::string text, callback<extraction> done) override;
  std::string name() const override { return "openai"; }

  /// Requests sent and retries scheduled so far (all extract() calls together).
  openai_stats stats() const;

  /// Implementation detail: the state every in-flight call shares (defined in the .cpp).
  struct shared;

private:
  std::shared_ptr<shared> shared_;
};

/// The request body for `text` (exposed for tests).
std::string build_chat_request(const openai_options& opts, std::string_view text);

/// One HTTP exchange's outcome, classified (exposed for tests): the extraction, or an error
/// whose class decides retrying. Tokens and model are filled when the response reports them,
/// also on failure (a truncated answer still costs tokens) via `usage_out`.
result<extraction> parse_chat_response(const http_response& response, const openai_options& opts,
                                       extraction* usage_out = nullptr);

/// The server's requested wait from retry-after-ms or Retry-After (seconds or an HTTP date), or
/// negative when absent or unreadable.
int64_t retry_after_ms(const http_response& response);

} // namespace ingestd
