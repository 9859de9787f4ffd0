// The chat-completions call: request building, defensive parsing of answers and error bodies
// (OpenAI, vLLM, llama.cpp, Ollama, Anthropic-style), classification, and in-process retries
// scheduled on a timer.
#include "adapters/extraction/chat_completion.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <ctime>
#include <mutex>
#include <optional>
#include <random>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/support/log.hpp"
#include "messages/error_codes.hpp"
#include "messages/text.hpp"

namespace ingestd {

namespace {

/// The answer's tokens counted against a tokens-per-minute limit when max_output_tokens is not set.
constexpr int64_t estimated_answer_tokens = 1000;

std::string lower_ascii(std::string_view s) {
  std::string out{s};
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string_view find_header(const http_response& r, std::string_view name) {
  for (const auto& [k, v] : r.headers)
    if (lower_ascii(k) == lower_ascii(name))
      return v;
  return {};
}

std::string string_member(const rapidjson::Value& obj, const char* key) {
  if (!obj.IsObject())
    return {};
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd())
    return {};
  if (it->value.IsString())
    return {it->value.GetString(), it->value.GetStringLength()};
  if (it->value.IsInt64())
    return std::to_string(it->value.GetInt64());
  return {};
}

bool mentions_context_limit(std::string_view text) {
  auto low = lower_ascii(text);
  for (std::string_view w :
       {"context_length_exceeded", "exceed_context_size", "context length", "maximum context",
        "context window", "context size", "context_size", "too many tokens", "prompt is too long",
        "input is too large", "exceeds the available context", "maximum input length"})
    if (low.find(w) != std::string::npos)
      return true;
  return false;
}

/// An error body's code, type and message, whatever the server's dialect.
struct error_body {
  std::string code;
  std::string type;
  std::string message;
};

error_body read_error_body(std::string_view body) {
  error_body out;
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    out.message = std::string{utf8_prefix(body, 300)};
    return out;
  }
  auto err = doc.FindMember("error");
  if (err != doc.MemberEnd() && err->value.IsObject()) {
    // OpenAI {"error":{"message","type","param","code"}}, llama.cpp (integer code and a type),
    // Anthropic {"type":"error","error":{"type","message"}}.
    out.code = string_member(err->value, "code");
    out.type = string_member(err->value, "type");
    out.message = string_member(err->value, "message");
  } else if (err != doc.MemberEnd() && err->value.IsString()) {
    out.message = err->value.GetString(); // {"error":"..."} (Ollama, older servers)
  } else {
    // vLLM {"object":"error","message":...,"type":...,"code":400}
    out.code = string_member(doc, "code");
    out.type = string_member(doc, "type");
    out.message = string_member(doc, "message");
    if (out.message.empty())
      out.message = string_member(doc, "detail");
  }
  return out;
}

error classify_status(const http_response& response, const chat_options& opts) {
  auto body = read_error_body(response.body);
  long status = response.status;
  std::string detail = "HTTP " + std::to_string(status);
  if (!body.code.empty() || !body.type.empty())
    detail += " (" + (body.code.empty() ? body.type : body.code) + ")";
  if (!body.message.empty())
    detail += ": " + body.message;
  detail = scrub_secret(std::move(detail), opts.api_key);
  bool context = body.code == "context_length_exceeded" || body.type == "exceed_context_size_error"
                 || mentions_context_limit(body.message);
  if (context && (status == 400 || status == 413 || status >= 500))
    return error::make_permanent(errc::llm_context_exceeded, detail);
  if (status == 429) {
    if (opts.quota_is_permanent
        && (body.code == "insufficient_quota" || body.type == "insufficient_quota"
            || lower_ascii(body.message).find("quota") != std::string::npos))
      return error::make_permanent("llm.insufficient_quota", detail);
    auto e = error::make_transient("llm.rate_limited", detail);
    e.retry_after_ms = retry_after_ms(response);
    return e;
  }
  if (status == 401)
    return error::make_permanent("llm.unauthorized", detail);
  if (status == 403)
    return error::make_permanent("llm.forbidden", detail);
  if (status == 408 || status == 409) {
    auto e = error::make_transient("llm.http_" + std::to_string(status), detail);
    e.retry_after_ms = retry_after_ms(response);
    return e;
  }
  if (status >= 500) {
    auto e = error::make_transient("llm.server_error", detail);
    e.retry_after_ms = retry_after_ms(response);
    return e;
  }
  if (status == 404)
    return error::make_permanent("llm.not_found", detail);
  // Any other 4xx: the request itself is wrong (bad model, bad schema); resending cannot help.
  return error::make_permanent("llm.bad_request", detail);
}

/// Some servers without strict mode wrap JSON in a Markdown fence.
std::string_view strip_fence(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  if (s.size() >= 6 && s.substr(0, 3) == "```" && s.substr(s.size() - 3) == "```") {
    s.remove_suffix(3);
    auto nl = s.find('\n');
    s = nl == std::string_view::npos ? std::string_view{} : s.substr(nl + 1);
  }
  return s;
}

} // namespace

std::string scrub_secret(std::string text, const std::string& secret) {
  if (secret.size() >= 4)
    for (auto p = text.find(secret); p != std::string::npos; p = text.find(secret, p))
      text.replace(p, secret.size(), "[redacted]");
  if (text.size() > 400)
    text = std::string{utf8_prefix(text, 400)} + "...";
  return text;
}

std::string chat_url(std::string base) {
  while (!base.empty() && base.back() == '/')
    base.pop_back();
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0)
    return base + "/chat/completions";
  return base + "/v1/chat/completions";
}

int64_t retry_after_ms(const http_response& response) {
  auto parse_number = [](std::string_view v) -> std::optional<double> {
    std::string s{v};
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end == s.c_str() || *end != '\0' || !std::isfinite(d) || d < 0)
      return std::nullopt;
    return d;
  };
  // Clamped before the conversion: a double beyond int64_t's range does not convert.
  auto to_ms = [](double ms) {
    return ms >= static_cast<double>(max_retry_after_ms) ? max_retry_after_ms
                                                         : static_cast<int64_t>(std::ceil(ms));
  };
  if (auto ms = find_header(response, "retry-after-ms"); !ms.empty())
    if (auto d = parse_number(ms))
      return to_ms(*d);
  auto ra = find_header(response, "retry-after");
  if (ra.empty())
    return -1;
  if (auto d = parse_number(ra))
    return to_ms(*d * 1000);
  // An HTTP date: "Wed, 21 Oct 2015 07:28:00 GMT".
  std::tm tm{};
  std::string s{ra};
  if (strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S", &tm) == nullptr)
    return -1;
  auto when = timegm(&tm);
  auto now = std::time(nullptr);
  if (when == static_cast<std::time_t>(-1))
    return -1;
  return when > now ? to_ms(static_cast<double>(when - now) * 1000) : 0;
}

std::string compact_json(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject())
    return {};
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  doc.Accept(w);
  return {buf.GetString(), buf.GetSize()};
}

std::string build_chat_body(const chat_options& opts, const chat_prompt& prompt) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  auto str
      = [&](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
  w.StartObject();
  w.Key("model");
  str(opts.model);
  w.Key("messages");
  w.StartArray();
  w.StartObject();
  w.Key("role");
  str("system");
  w.Key("content");
  str(prompt.system ? std::string_view{*prompt.system} : std::string_view{});
  w.EndObject();
  w.StartObject();
  w.Key("role");
  str("user");
  w.Key("content");
  str(prompt.user);
  w.EndObject();
  w.EndArray();
  w.Key("response_format");
  w.StartObject();
  w.Key("type");
  str("json_schema");
  w.Key("json_schema");
  w.StartObject();
  w.Key("name");
  str(prompt.schema_name);
  w.Key("strict");
  w.Bool(true);
  w.Key("schema");
  if (prompt.schema_json.empty())
    w.Null(); // a programming error of the caller; the server answers 400 (permanent)
  else
    w.RawValue(prompt.schema_json.data(), prompt.schema_json.size(), rapidjson::kObjectType);
  w.EndObject();
  w.EndObject();
  if (opts.temperature >= 0) {
    w.Key("temperature");
    w.Double(opts.temperature);
  }
  if (opts.max_output_tokens > 0) {
    w.Key("max_tokens");
    w.Int(opts.max_output_tokens);
  }
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

result<chat_answer> parse_chat_answer(const http_response& response, const chat_options& opts,
                                      chat_usage* usage_out) {
  if (response.status < 200 || response.status >= 300)
    return classify_status(response, opts);
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(response.body.data(), response.body.size());
  if (doc.HasParseError() || !doc.IsObject())
    return error::make_transient("llm.invalid_response",
                                 "HTTP " + std::to_string(response.status)
                                     + " with a body that is not a JSON object");
  // A 200 that carries an error object (some proxies do this).
  if (doc.HasMember("error") && !doc.HasMember("choices")) {
    http_response as_error = response;
    as_error.status = 500;
    auto body = read_error_body(response.body);
    if (body.code == "context_length_exceeded" || mentions_context_limit(body.message))
      as_error.status = 400;
    return classify_status(as_error, opts);
  }
  chat_usage usage;
  if (auto u = doc.FindMember("usage"); u != doc.MemberEnd() && u->value.IsObject()) {
    if (auto p = u->value.FindMember("prompt_tokens");
        p != u->value.MemberEnd() && p->value.IsInt64())
      usage.input_tokens = p->value.GetInt64();
    if (auto c = u->value.FindMember("completion_tokens");
        c != u->value.MemberEnd() && c->value.IsInt64())
      usage.output_tokens = c->value.GetInt64();
  }
  usage.model = string_member(doc, "model");
  if (usage.model.empty())
    usage.model = opts.model;
  if (usage_out)
    *usage_out = usage;
  auto choices = doc.FindMember("choices");
  if (choices == doc.MemberEnd() || !choices->value.IsArray() || choices->value.Empty()
      || !choices->value[0].IsObject())
    return error::make_transient("llm.empty_response", "the answer has no choices");
  const auto& choice = choices->value[0];
  std::string finish = string_member(choice, "finish_reason");
  auto msg = choice.FindMember("message");
  const rapidjson::Value* message
      = msg != choice.MemberEnd() && msg->value.IsObject() ? &msg->value : nullptr;
  std::string refusal = message ? string_member(*message, "refusal") : std::string{};
  auto content_it = message ? message->FindMember("content") : choice.MemberEnd();
  bool has_content = message && content_it != message->MemberEnd() && content_it->value.IsString()
                     && content_it->value.GetStringLength() > 0;
  if (finish == "length")
    return error::make_transient("llm.truncated", "the answer was cut off at the output token limit"
                                                  " (finish_reason length)");
  if (!refusal.empty() || finish == "content_filter") {
    std::string text
        = "the model refused: " + (refusal.empty() ? std::string{"content filter"} : refusal);
    text = scrub_secret(std::move(text), opts.api_key);
    return opts.refusal_is_permanent ? error::make_permanent("llm.refusal", std::move(text))
                                     : error::make_transient("llm.refusal", std::move(text));
  }
  if (!has_content)
    return error::make_transient("llm.empty_response", "the answer has no content");
  auto content = strip_fence({content_it->value.GetString(), content_it->value.GetStringLength()});
  return chat_answer{std::string{content}, std::move(usage)};
}

struct chat_client::shared {
  http_client& http;
  timer& tmr;
  chat_options opts;
  std::string purpose;
  std::string url;
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> retries{0};
  std::mutex rng_mtx;
  std::mt19937_64 rng{std::random_device{}()};

  shared(http_client& h, timer& t, chat_options o, std::string p)
      : http(h), tmr(t), opts(std::move(o)), purpose(std::move(p)), url(chat_url(opts.base_url)) {}

  std::chrono::milliseconds backoff(int failed_attempts) {
    double base
        = static_cast<double>(opts.base_backoff.count()) * std::pow(2.0, failed_attempts - 1);
    double factor = 1;
    if (opts.jitter > 0) {
      std::lock_guard lock{rng_mtx};
      factor = std::uniform_real_distribution<double>{1 - opts.jitter, 1 + opts.jitter}(rng);
    }
    return std::chrono::milliseconds{static_cast<int64_t>(base * factor)};
  }
};

namespace {

/// One complete() call across its attempts. Whoever drops the last reference without finishing
/// (a timer shut down with the retry pending) answers "llm.cancelled": exactly one answer.
struct chat_call : std::enable_shared_from_this<chat_call> {
  std::shared_ptr<chat_client::shared> s;
  /// The prompt; each attempt builds its request body from it, so a call waiting on a slow
  /// server holds the body once (in the HTTP engine) and, of the prompt, only the user message
  /// (the system message and the schema are the caller's, shared by its calls).
  chat_prompt prompt;
  chat_client::acceptor accept;
  callback<chat_usage> done;
  /// Passed to every attempt's request: the caller hears when one waits for the provider's limits.
  call_context context;
  int attempt = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::atomic<bool> finished{false};

  ~chat_call() {
    if (!finished.exchange(true) && done)
      done(error::make_transient("llm.cancelled", "the " + s->purpose
                                                      + " was abandoned before an answer"
                                                        " (retry timer stopped)"));
  }

  void finish(result<chat_usage> r) {
    if (finished.exchange(true))
      return;
    auto cb = std::move(done);
    cb(std::move(r));
  }

  void start() {
    ++attempt;
    ++s->requests;
    http_request req;
    req.method = "POST";
    req.url = s->url;
    req.headers = {{"Content-Type", "application/json"}, {"Accept", "application/json"}};
    if (!s->opts.api_key.empty())
      req.headers.emplace_back("Authorization", "Bearer " + s->opts.api_key);
    req.body = build_chat_body(s->opts, prompt);
    // For a tokens-per-minute limit: about four bytes a token in, and the answer's bound out.
    req.estimated_tokens
        = static_cast<int64_t>(req.body.size() / 4)
          + (s->opts.max_output_tokens > 0 ? s->opts.max_output_tokens : estimated_answer_tokens);
    req.context = context;
    // Answers are a few kB: a small receive buffer keeps thousands of waiting calls cheap.
    req.receive_buffer_bytes = 1024;
    req.connect_timeout = s->opts.connect_timeout;
    req.total_timeout = s->opts.request_timeout;
    s->http.submit(std::move(req), [self = shared_from_this()](result<http_response> r) {
      self->on_response(std::move(r));
    });
  }

  /// The attempt's outcome: the answer's usage once `accept` took it, or the classified error.
  result<chat_usage> outcome_of(result<http_response> r) {
    if (!r) {
      auto e = r.error();
      std::string code = e.code;
      if (code.rfind("http.", 0) == 0)
        code = "llm." + code.substr(5);
      return error{e.cls, code, "LLM request failed: " + scrub_secret(e.message, s->opts.api_key),
                   e.retry_after_ms};
    }
    chat_usage usage;
    auto answer = parse_chat_answer(*r, s->opts, &usage);
    input_tokens += usage.input_tokens;
    output_tokens += usage.output_tokens;
    if (!answer)
      return answer.error();
    if (auto taken = accept(*answer); !taken)
      return taken.error();
    return chat_usage{input_tokens, output_tokens, answer->usage.model};
  }

  void on_response(result<http_response> r) {
    auto outcome = outcome_of(std::move(r));
    int max_attempts = std::max(1, s->opts.max_attempts);
    if (outcome) {
      finish(std::move(outcome));
      return;
    }
    auto& err = outcome.error();
    bool too_long = err.retry_after_ms > s->opts.max_retry_after.count();
    // A request that waited its longest for the provider's limits is not retried here: the
    // line is full, and the job gives its work back.
    if (err.permanent() || attempt >= max_attempts || too_long || provider_busy(err)) {
      err.message
          += " (attempt " + std::to_string(attempt) + " of " + std::to_string(max_attempts) + ")";
      log::write_with(log::level::warn, "llm " + s->purpose + " failed",
                      log::fields_of(context.fields()),
                      {{"error", err.describe()}, {"error_class", to_string(err.cls)}});
      finish(std::move(outcome));
      return;
    }
    auto wait = err.retry_after_ms >= 0 ? std::chrono::milliseconds{err.retry_after_ms}
                                        : s->backoff(attempt);
    ++s->retries;
    log::write_with(log::level::info, "llm attempt failed; retrying",
                    log::fields_of(context.fields()),
                    {{"purpose", s->purpose},
                     {"llm_attempt", attempt},
                     {"max_attempts", max_attempts},
                     {"error", err.code},
                     {"retry_in_ms", static_cast<int64_t>(wait.count())}});
    s->tmr.after(wait, [self = shared_from_this()] { self->start(); });
  }
};

} // namespace

chat_client::chat_client(http_client& http, timer& retry_timer, chat_options opts,
                         std::string purpose)
    : shared_(std::make_shared<shared>(http, retry_timer, std::move(opts), std::move(purpose))) {}

chat_client::~chat_client() = default;

void chat_client::complete(chat_prompt prompt, acceptor accept, callback<chat_usage> done,
                           call_context context) {
  auto call = std::make_shared<chat_call>();
  call->s = shared_;
  call->prompt = std::move(prompt);
  call->accept = std::move(accept);
  call->done = std::move(done);
  call->context = std::move(context);
  call->start();
}

const chat_options& chat_client::options() const {
  return shared_->opts;
}

chat_stats chat_client::stats() const {
  return chat_stats{shared_->requests.load(), shared_->retries.load()};
}

} // namespace ingestd
