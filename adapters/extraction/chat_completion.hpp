// One OpenAI-compatible chat-completions call in strict json_schema mode, shared by every LLM
// adapter (the extractor, the matcher): the request body, defensive parsing of answers and error
// bodies (OpenAI, vLLM, llama.cpp, Ollama), the classification of errors, and in-process
// retries with back-off and jitter scheduled on a timer, never a blocked thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/http/http_client.hpp"
#include "adapters/support/timer.hpp"
#include "messages/result.hpp"

namespace ingestd {

/// The connection, model and retry settings of a chat-completions caller (openai_options and
/// llm_matcher_options extend it).
struct chat_options {
  /// Without the trailing "/v1" (a "/v1" suffix is accepted too): requests go to
  /// {base_url}/v1/chat/completions.
  std::string base_url = "https://api.openai.com";
  /// Sent as "Authorization: Bearer ..." when not empty; never logged. The daemon reads it from
  /// INGESTD_LLM_API_KEY.
  std::string api_key;
  std::string model = "gpt-4o-mini";
  /// Omitted from the request when negative (some reasoning models refuse it).
  double temperature = 0;
  /// Sent as max_tokens when positive.
  int max_output_tokens = 0;
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds request_timeout{120'000};
  /// Attempts per call, the first included (3 by default).
  int max_attempts = 3;
  /// Wait before the second attempt; doubles for each later one (2 s -> 4 s -> 8 s).
  std::chrono::milliseconds base_backoff{2'000};
  /// Each wait is multiplied by a random factor in [1 - jitter, 1 + jitter].
  double jitter = 0.25;
  /// A server-requested wait (retry-after-ms, Retry-After) longer than this is not waited out
  /// in process: the error goes to the pipeline at once with retry_after_ms set, so the queue's
  /// back-off can honour it.
  std::chrono::milliseconds max_retry_after{120'000};
  /// A refusal (null content, "refusal" set) is transient by default: models refuse only
  /// spuriously, and a retry is bounded by max_attempts anyway. True makes it permanent.
  bool refusal_is_permanent = false;
  /// An HTTP 429 whose body says the quota is exhausted ("insufficient_quota"): permanent when
  /// true (waiting does not refill a billing quota), transient like every 429 when false (the
  /// matcher's setting).
  bool quota_is_permanent = true;
};

/// One request: a system and a user message, and the JSON schema the answer must follow.
struct chat_prompt {
  /// The system message, shared by a caller's calls (its configured or default prompt): thousands
  /// of calls waiting on a slow provider hold no copy of it each.
  std::shared_ptr<const std::string> system;
  std::string user;
  /// response_format.json_schema.name, e.g. "invoice".
  std::string schema_name;
  /// The schema as compact JSON text (an object; compact_json's), written into each request as it
  /// is: a constant of the caller's, outliving its calls. Empty sends a null schema.
  std::string_view schema_json;
};

/// Tokens and model an answer reports (zero and the configured model when it does not).
struct chat_usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::string model;
};

/// A usable answer: the model's content (fences stripped) and its usage.
struct chat_answer {
  std::string content;
  chat_usage usage;
};

/// `json` without its insignificant whitespace, or empty when it is not one JSON object. A
/// schema is made compact once, by its owner: a request then carries it without parsing it.
std::string compact_json(std::string_view json);

/// The request body of `prompt` in strict json_schema mode.
std::string build_chat_body(const chat_options& opts, const chat_prompt& prompt);

/// One HTTP exchange's outcome, classified: the content, or an error whose class decides
/// retrying. `usage_out` gets the reported usage also when the answer is unusable (a truncated
/// answer still costs tokens).
result<chat_answer> parse_chat_answer(const http_response& response, const chat_options& opts,
                                      chat_usage* usage_out = nullptr);

/// The server's requested wait from retry-after-ms or Retry-After (seconds or an HTTP date), or
/// negative when absent or unreadable.
int64_t retry_after_ms(const http_response& response);

/// {base_url}/v1/chat/completions.
std::string chat_url(std::string base_url);

/// Removes `secret` from text that might echo it and cuts it to 400 bytes.
std::string scrub_secret(std::string text, const std::string& secret);

/// Counters for tests and metrics.
struct chat_stats {
  uint64_t requests = 0;
  uint64_t retries = 0;
};

/// Runs chat calls over the http_client port with retries: up to max_attempts
/// attempts for a transient error (HTTP 429, 5xx, 408, timeout, connection refused, an
/// unparseable, truncated, refused or schema-invalid answer), waiting base_backoff * 2^(n-1)
/// with jitter, or the server's Retry-After when it sends one (up to max_retry_after); a
/// permanent error (HTTP 400 context window exceeded, 401, 403, any other 4xx) ends the call at
/// once.
class chat_client {
public:
  /// Reads an answer's content into the caller's value; an error it returns (e.g.
  /// "llm.schema_invalid", transient) is treated like any other, so a schema-invalid answer is
  /// retried. Called at most once per attempt, on the HTTP engine's thread.
  using acceptor = std::function<result<void>(const chat_answer&)>;

  /// `purpose` names the calls in logs and messages ("extraction", "match decision").
  /// `http` and `retry_timer` must outlive every call in flight.
  chat_client(http_client& http, timer& retry_timer, chat_options opts, std::string purpose);
  ~chat_client();
  chat_client(const chat_client&) = delete;
  chat_client& operator=(const chat_client&) = delete;

  /// Calls `done` exactly once: with the usage summed over all attempts (model: the answering
  /// one) after `accept` took an answer, or with the last attempt's classified error, whose
  /// message says how many attempts ran. A call abandoned because the timer shut down with its
  /// retry pending answers a transient "llm.cancelled".
  /// `context` goes with every attempt's request (see http_request::context), and its log fields
  /// on every line about the call.
  void complete(chat_prompt prompt, acceptor accept, callback<chat_usage> done,
                call_context context = {});

  const chat_options& options() const;
  /// Requests sent and retries scheduled so far (all calls together).
  chat_stats stats() const;

  /// Implementation detail: the state every in-flight call shares (defined in the .cpp).
  struct shared;

private:
  std::shared_ptr<shared> shared_;
};

} // namespace ingestd
