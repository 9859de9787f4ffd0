// Builds the configured providers.
#include "adapters/providers/provider_set.hpp"

#include <algorithm>

#include "adapters/convert/converting_transcriber.hpp"
#include "adapters/extraction/fallback_extractor.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "adapters/extraction/openai_extractor.hpp"
#include "adapters/http/curl_engine.hpp"
#include "adapters/http/rate_limited_client.hpp"
#include "adapters/matching/llm_matcher.hpp"
#include "adapters/matching/local_matcher.hpp"
#include "adapters/ocr/document_ai_transcriber.hpp"
#include "adapters/ocr/local_transcriber.hpp"
#include "adapters/ocr/recovering_transcriber.hpp"
#include "adapters/support/log.hpp"
#include "config/providers.hpp"

namespace ingestd {

provider_set::provider_set(const config& cfg, cpu_executor& cpu) : cfg_(cfg), cpu_(cpu) {}

provider_set::~provider_set() {
  matcher_.reset();
  extractors_.reset();
  transcribers_.reset();
  limiters_.clear();
}

std::shared_ptr<curl_engine> provider_set::http() {
  if (!http_) {
    curl_engine_options opts;
    opts.max_total_connections = cfg_.http.max_total_connections;
    opts.max_connections_per_host = cfg_.http.max_connections_per_host;
    opts.https_connections_per_host = cfg_.http.https_connections_per_host;
    opts.connection_cache_size = cfg_.http.connection_cache_size;
    http_ = std::make_shared<curl_engine>(opts);
  }
  return http_;
}

// One limiter per provider, shared by its adapters (the extractor and the matcher both call the
// LLM), even without limits: its figures show each provider's traffic in /metrics.
http_client& provider_set::limited(const std::string& provider) {
  for (auto& l : limiters_)
    if (l->provider() == provider)
      return *l;
  auto& c = cfg_.limits;
  auto wait = std::chrono::milliseconds{std::chrono::seconds{c.max_wait_seconds}};
  provider_limits limits{0, 0, 0, wait};
  if (provider == "llm")
    limits = {c.llm_max_concurrent, c.llm_requests_per_minute, c.llm_tokens_per_minute, wait};
  else if (provider == "document_ai")
    limits = {c.document_ai_max_concurrent, c.document_ai_requests_per_minute, 0, wait};
  else if (provider == "webhook")
    limits = {c.webhook_max_concurrent, c.webhook_requests_per_minute, 0, wait};
  auto engine = http();
  limiters_.push_back(std::make_shared<rate_limited_client>(provider, *engine, *engine, limits));
  return *limiters_.back();
}

http_client& provider_set::webhook_client() {
  return limited("webhook");
}

result<provider_set::transcriber_map> provider_set::transcribers() {
  if (transcribers_)
    return *transcribers_;
  auto& t = cfg_.transcription;
  if (t.provider == "document_ai" && cfg_.secrets.document_ai_token.empty())
    return error::make_permanent(
        "config.secret_missing",
        "transcription.provider is document_ai but INGESTD_DOCUMENT_AI_TOKEN is not set");
  auto tesseract = [&]() -> std::shared_ptr<transcriber> {
    auto opts = make_local_transcriber_options(t.languages, static_cast<size_t>(t.max_file_bytes),
                                               t.max_pages, std::chrono::seconds{t.timeout_seconds},
                                               t.other_languages);
    return std::make_shared<local_transcriber>(cpu_, opts);
  };
  auto document_ai = [&]() -> std::shared_ptr<transcriber> {
    document_ai_options opts;
    opts.endpoint = t.document_ai_endpoint;
    opts.access_token = cfg_.secrets.document_ai_token;
    opts.timeout = std::chrono::seconds{t.timeout_seconds};
    opts.max_file_bytes = static_cast<size_t>(t.max_file_bytes);
    // A document Document AI refuses goes to Tesseract, with its own page limit (a document
    // over Document AI's is what it is there for); a poor reading is preprocessed and sent once
    // more.
    document_limits defaults;
    auto local = make_local_transcriber_options(t.languages, static_cast<size_t>(t.max_file_bytes),
                                                std::max(t.max_pages, defaults.max_pages),
                                                std::chrono::seconds{t.timeout_seconds},
                                                t.other_languages);
    return std::make_shared<recovering_transcriber>(
        std::make_shared<document_ai_transcriber>(limited("document_ai"), opts),
        std::make_shared<local_transcriber>(cpu_, local), cpu_, local.limits);
  };
  // Office documents are read through their PDF, whichever provider reads it.
  office_converter_options office;
  office.max_output_bytes = static_cast<uint64_t>(t.max_file_bytes);
  transcriber_map out;
  for (auto& name : available_transcription_providers(cfg_))
    out[name] = std::make_shared<converting_transcriber>(
        name == "document_ai" ? document_ai() : tesseract(), cpu_, office,
        std::chrono::seconds{t.timeout_seconds});
  transcribers_ = std::move(out);
  return *transcribers_;
}

provider_set::extractor_map provider_set::extractors() {
  if (extractors_)
    return *extractors_;
  auto llm = [&]() -> std::shared_ptr<extractor> {
    if (cfg_.secrets.llm_api_key.empty())
      log::warn("the LLM extractor has no INGESTD_LLM_API_KEY: requests go without a key");
    openai_options opts;
    opts.base_url = cfg_.extraction.llm_base_url;
    opts.api_key = cfg_.secrets.llm_api_key;
    opts.model = cfg_.extraction.llm_model;
    opts.request_timeout = std::chrono::seconds{cfg_.extraction.timeout_seconds};
    opts.max_attempts = cfg_.extraction.max_attempts;
    // The engine's thread also runs the retry back-off. A text too long for the model goes to
    // the local rules, for review.
    return std::make_shared<fallback_extractor>(
        std::make_shared<openai_extractor>(limited("llm"), *http(), opts),
        std::make_shared<local_extractor>());
  };
  extractor_map out;
  for (auto& name : available_extraction_providers(cfg_))
    out[name] = name == "llm" ? llm() : std::make_shared<local_extractor>();
  extractors_ = std::move(out);
  return *extractors_;
}

std::shared_ptr<ingestd::matcher> provider_set::matcher() {
  if (matcher_)
    return matcher_;
  auto& m = cfg_.matching;
  if (m.provider == "local") {
    matcher_ = std::make_shared<local_matcher>();
  } else {
    llm_matcher_options opts;
    opts.base_url = cfg_.extraction.llm_base_url;
    opts.api_key = cfg_.secrets.llm_api_key;
    opts.model = m.llm_model.empty() ? cfg_.extraction.llm_model : m.llm_model;
    opts.request_timeout = std::chrono::seconds{m.timeout_seconds};
    opts.max_candidates = static_cast<size_t>(m.candidate_limit);
    // The engine's thread also runs the retry back-off (2 s, 4 s, 8 s).
    matcher_ = std::make_shared<llm_matcher>(limited("llm"), *http(), opts);
  }
  return matcher_;
}

} // namespace ingestd
