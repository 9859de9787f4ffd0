// The providers a configuration names, built once for a process: the HTTP engine (made on first
// need: the embedded default speaks no HTTP), each remote provider's limits in front of it, the
// transcription and extraction providers by name, the matcher, and the HTTP client of webhooks.
// `ingestd run` shares one set between its stages and sinks; the one-document commands use their
// own.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/extraction/extractor.hpp"
#include "adapters/matching/matcher.hpp"
#include "adapters/ocr/transcriber.hpp"
#include "config/config.hpp"
#include "messages/result.hpp"

namespace ingestd {

class cpu_executor;
class curl_engine;
class http_client;
class rate_limited_client;

class provider_set {
public:
  using transcriber_map = std::map<std::string, std::shared_ptr<transcriber>, std::less<>>;
  using extractor_map = std::map<std::string, std::shared_ptr<extractor>, std::less<>>;

  /// `cpu` runs local OCR and must outlive the set.
  provider_set(const config& cfg, cpu_executor& cpu);
  /// The providers first, then the engine: it answers their calls still in flight.
  ~provider_set();
  provider_set(const provider_set&) = delete;
  provider_set& operator=(const provider_set&) = delete;

  /// Every transcription provider whose configuration is complete, by its name
  /// (config/providers.hpp); the configured one (transcription.provider) among them. Document AI
  /// without its token is a configuration error.
  result<transcriber_map> transcribers();
  /// Every extraction provider the configuration lets a node run, by name.
  extractor_map extractors();
  /// The matcher of matching.provider.
  std::shared_ptr<ingestd::matcher> matcher();

  /// The HTTP client of the webhooks (failure notices, the event webhook), behind their limits.
  http_client& webhook_client();
  /// The engine every HTTP adapter of the process shares (made on first call).
  std::shared_ptr<curl_engine> http();
  /// Each provider's limits, for /metrics.
  const std::vector<std::shared_ptr<rate_limited_client>>& limiters() const { return limiters_; }

private:
  http_client& limited(const std::string& provider);

  const config& cfg_;
  cpu_executor& cpu_;
  // Declared first so that it goes last: the limiters and providers hold references to it.
  std::shared_ptr<curl_engine> http_;
  std::vector<std::shared_ptr<rate_limited_client>> limiters_;
  std::optional<transcriber_map> transcribers_;
  std::optional<extractor_map> extractors_;
  std::shared_ptr<ingestd::matcher> matcher_;
};

} // namespace ingestd
