// Which providers a configuration can run, and what the others need.
#include "config/providers.hpp"

namespace ingestd {

namespace {

template <size_t N>
std::string joined(const std::string_view (&names)[N]) {
  std::string out;
  for (auto name : names)
    out.append(out.empty() ? "" : ", ").append(name);
  return out;
}

/// `configured` first, then the others of `names` that `runs` says the node can run.
template <size_t N, class Runs>
std::vector<std::string> available(const std::string_view (&names)[N],
                                   const std::string& configured, Runs runs) {
  std::vector<std::string> out{configured};
  for (auto name : names)
    if (name != configured && runs(name))
      out.emplace_back(name);
  return out;
}

} // namespace

std::string transcription_provider_list() {
  return joined(transcription_provider_names);
}

std::string extraction_provider_list() {
  return joined(extraction_provider_names);
}

std::string_view provider_requirement(std::string_view provider) {
  if (provider == "document_ai")
    return "transcription.document_ai_endpoint and INGESTD_DOCUMENT_AI_TOKEN";
  if (provider == "llm")
    return "extraction.llm_base_url (a server of your own) or INGESTD_LLM_API_KEY (for the default "
           "server)";
  return {};
}

std::vector<std::string> available_transcription_providers(const config& cfg) {
  return available(transcription_provider_names, cfg.transcription.provider,
                   [&cfg](std::string_view name) {
                     if (name == "document_ai")
                       return !cfg.transcription.document_ai_endpoint.empty()
                              && !cfg.secrets.document_ai_token.empty();
                     return true;
                   });
}

std::vector<std::string> available_extraction_providers(const config& cfg) {
  return available(
      extraction_provider_names, cfg.extraction.provider, [&cfg](std::string_view name) {
        if (name == "llm")
          // The default URL is always "set": without a key it would only answer 401.
          return cfg.extraction.llm_base_url != default_config().extraction.llm_base_url
                 || !cfg.secrets.llm_api_key.empty();
        return true;
      });
}

} // namespace ingestd
