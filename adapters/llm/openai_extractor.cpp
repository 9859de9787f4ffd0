// OpenAI-compatible extraction: request building, defensive parsing of answers and error bodies
// (OpenAI, vLLM, llama.cpp), classification, and in-process retries scheduled on a timer.
#include "adapters/llm/openai_extractor.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <ctime>
#include <mutex>
#include <random>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/llm/extraction_schema.hpp"
#include "adapters/support/log.hpp"
#include "messages/text.hpp"

namespace ingestd {

namespace {

constexpr std::string_view default_prompt =
  "You extract structured data from invoices. The user message is the text of one document, "
  "transcribed by OCR or taken from a PDF's text layer; it may contain OCR errors. Answer with "
  "one JSON object that matches the schema. Copy values as printed and never invent one: use "
  "null for anything absent or illegible and list those field names in missing_fields "
  "(\"line_items\" when there are none). Dates as YYYY-MM-DD. Amounts as plain numbers without "
  "currency symbols or thousands separators (\"1.234,56\" is 1234.56). currency as an ISO 4217 "
  "code. supplier_vat_id without spaces. subtotal is the net amount, vat_amount the total VAT, "
  "total the gross amount payable. extraction_successful is false when the document is not an "
  "invoice or its key fields (invoice_number, invoice_date, supplier_name, total) cannot be "
  "read. confidence is \"high\" only when every key field is legible and subtotal + vat_amount "
  "equals total, \"medium\" when something is uncertain, \"low\" when you had to guess.";

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

/// Removes the API key from text that might echo it (some servers quote the header back).
std::string scrub(std::string text, const std::string& secret) {
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
  for (std::string_view w : {"context_length_exceeded", "exceed_context_size", "context length",
                             "maximum context", "context window", "context size", "context_size",
                             "too many tokens", "prompt is too long", "input is too large",
                             "exceeds the available context", "maximum input length"})
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

error classify_status(const http_response& response, const openai_options& opts) {
  auto body = read_error_body(response.body);
  long status = response.status;
  std::string detail = "HTTP " + std::to_string(status);
  if (!body.code.empty() || !body.type.empty())
    detail += " (" + (body.code.empty() ? body.type : body.code) + ")";
  if (!body.message.empty())
    detail += ": " + body.message;
  detail = scrub(std::move(detail), opts.api_key);
  bool context = body.code == "context_length_exceeded" || body.type == "exceed_context_size_error"
                 || mentions_context_limit(body.message);
  if (context && (status == 400 || status == 413 || status >= 500))
    return error::make_permanent("llm.context_exceeded", detail);
  if (status == 429) {
    if (body.code == "insufficient_quota" || body.type == "insufficient_quota"
        || lower_ascii(body.message).find("quota") != std::string::npos)
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

std::string build_chat_request(const openai_options& opts, std::string_view text) {
  rapidjson::Document schema;
  auto st = extraction_schema_json();
  schema.Parse(st.data(), st.size());
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  auto str = [&](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
  w.StartObject();
  w.Key("model");
  str(opts.model);
  w.Key("messages");
  w.StartArray();
  w.StartObject();
  w.Key("role");
  str("system");
  w.Key("content");
  str(opts.system_prompt.empty() ? default_prompt : std::string_view{opts.system_prompt});
  w.EndObject();
  w.StartObject();
  w.Key("role");
  str("user");
  w.Key("content");
  std::string content = "Document text:\n";
  content += text;
  str(content);
  w.EndObject();
  w.EndArray();
  w.Key("response_format");
  w.StartObject();
  w.Key("type");
  str("json_schema");
  w.Key("json_schema");
  w.StartObject();
  w.Key("name");
  str("invoice");
  w.Key("strict");
  w.Bool(true);
  w.Key("schema");
  schema.Accept(w);
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

result<extraction> parse_chat_response(const http_response& response, const openai_options& opts,
                                       extraction* usage_out) {
  if (response.status < 200 || response.status >= 300)
    return classify_status(response, opts);
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(response.body.data(), response.body.size());
  if (doc.HasParseError() || !doc.IsObject())
    return error::make_transient("llm.invalid_response", "HTTP " + std::to_string(response.status)
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
  extraction usage;
  if (auto u = doc.FindMember("usage"); u != doc.MemberEnd() && u->value.IsObject()) {
    if (auto p = u->value.FindMember("prompt_tokens"); p != u->value.MemberEnd() && p->value.IsInt64())
      usage.input_tokens = p->value.GetInt64();
    if (auto c = u->value.FindMember("completion_tokens"); c != u->value.MemberEnd() && c->value.IsInt64())
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
  const rapidjson::Value* message = msg != choice.MemberEnd() && msg->value.IsObject() ? &msg->value : nullptr;
  std::string refusal = message ? string_member(*message, "refusal") : std::string{};
  auto content_it = message ? message->FindMember("content") : choice.MemberEnd();
  bool has_content = message && content_it != message->MemberEnd() && content_it->value.IsString()
                     && content_it->value.GetStringLength() > 0;
  if (finish == "length")
    return error::make_transient("llm.truncated", "the answer was cut off at the output token limit"
                                                  " (finish_reason length)");
  if (!refusal.empty() || finish == "content_filter") {
    std::string text = "the model refused: " + (refusal.empty() ? std::string{"content filter"} : refusal);
    text = scrub(std::move(text), opts.api_key);
    return opts.refusal_is_permanent ? error::make_permanent("llm.refusal", std::move(text))
                                     : error::make_transient("llm.refusal", std::move(text));
  }
  if (!has_content)
    return error::make_transient("llm.empty_response", "the answer has no content");
  auto content = strip_fence({content_it->value.GetString(), content_it->value.GetStringLength()});
  auto parsed = extraction_from_json(content);
  if (!parsed)
    return parsed.error();
  parsed->input_tokens = usage.input_tokens;
  parsed->output_tokens = usage.output_tokens;
  parsed->model = usage.model;
  return parsed;
}

struct openai_extractor::shared {
  http_client& http;
  timer& tmr;
  openai_options opts;
  std::string url;
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> retries{0};
  std::mutex rng_mtx;
  std::mt19937_64 rng{std::random_device{}()};

  shared(http_client& h, timer& t, openai_options o)
    : http(h), tmr(t), opts(std::move(o)), url(chat_url(opts.base_url)) {}

  std::chrono::milliseconds backoff(int failed_attempts) {
    double base = static_cast<double>(opts.base_backoff.count()) * std::pow(2.0, failed_attempts - 1);
    double factor = 1;
    if (opts.jitter > 0) {
      std::lock_guard lock{rng_mtx};
      factor = std::uniform_real_distribution<double>{1 - opts.jitter, 1 + opts.jitter}(rng);
    }
    return std::chrono::milliseconds{static_cast<int64_t>(base * factor)};
  }
};

namespace {

/// One extract() call across its attempts. Whoever drops the last reference without finishing
/// (a timer shut down with the retry pending) answers "llm.cancelled": exactly one answer.
struct llm_call : std::enable_shared_from_this<llm_call> {
  std::shared_ptr<openai_extractor::shared> s;
  /// The document's text; each attempt builds its request body from it, so a call waiting on a
  /// slow server holds the body once (in the HTTP engine), not twice.
  std::string text;
  callback<extraction> done;
  int attempt = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::atomic<bool> finished{false};

  ~llm_call() {
    if (!finished.exchange(true) && done)
      done(error::make_transient("llm.cancelled", "the extraction was abandoned before an answer"
                                                  " (retry timer stopped)"));
  }

  void finish(result<extraction> r) {
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
    req.body = build_chat_request(s->opts, text);
    // Answers are a few kB: a small receive buffer keeps thousands of waiting calls cheap.
    req.receive_buffer_bytes = 1024;
    req.connect_timeout = s->opts.connect_timeout;
    req.total_timeout = s->opts.request_timeout;
    s->http.submit(std::move(req), [self = shared_from_this()](result<http_response> r) {
      self->on_response(std::move(r));
    });
  }

  void on_response(result<http_response> r) {
    result<extraction> outcome = error{};
    if (!r) {
      auto e = r.error();
      std::string code = e.code;
      if (code.rfind("http.", 0) == 0)
        code = "llm." + code.substr(5);
      outcome = error{e.cls, code, "LLM request failed: " + scrub(e.message, s->opts.api_key), e.retry_after_ms};
    } else {
      extraction usage;
      outcome = parse_chat_response(*r, s->opts, &usage);
      input_tokens += usage.input_tokens;
      output_tokens += usage.output_tokens;
    }
    int max_attempts = std::max(1, s->opts.max_attempts);
    if (outcome) {
      outcome->input_tokens = input_tokens;
      outcome->output_tokens = output_tokens;
      finish(std::move(outcome));
      return;
    }
    auto& err = outcome.error();
    bool too_long = err.retry_after_ms > s->opts.max_retry_after.count();
    if (err.permanent() || attempt >= max_attempts || too_long) {
      err.message += " (attempt " + std::to_string(attempt) + " of " + std::to_string(max_attempts) + ")";
      log::warn("llm extraction failed", {{"error", err.describe()}, {"error_class", to_string(err.cls)}});
      finish(std::move(outcome));
      return;
    }
    auto wait = err.retry_after_ms >= 0 ? std::chrono::milliseconds{err.retry_after_ms}
                                        : s->backoff(attempt);
    ++s->retries;
    log::info("llm attempt failed; retrying", {{"attempt", attempt}, {"max_attempts", max_attempts},
                                           {"error", err.code}, {"retry_in_ms", static_cast<int64_t>(wait.count())}});
    s->tmr.after(wait, [self = shared_from_this()] { self->start(); });
  }
};

} // namespace

openai_extractor::openai_extractor(http_client& http, timer& retry_timer, openai_options opts)
  : shared_(std::make_shared<shared>(http, retry_timer, std::move(opts))) {}

openai_extractor::~openai_extractor() = default;

void openai_extractor::extract(std::string text, callback<extraction> done) {
  auto call = std::make_shared<llm_call>();
  call->s = shared_;
  call->text = std::move(text);
  call->done = std::move(done);
  call->start();
}

openai_stats openai_extractor::stats() const {
  return openai_stats{shared_->requests.load(), shared_->retries.load()};
}

} // namespace ingestd
