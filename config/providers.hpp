// The transcription and extraction providers by the names the configuration uses
// (transcription.provider, extraction.provider) and a reprocess chooses per ingestion (the
// columns of migration 013), and which of them a node's configuration lets it run.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace ingestd {

inline constexpr std::string_view transcription_provider_names[] = {"tesseract", "document_ai"};
inline constexpr std::string_view extraction_provider_names[] = {"local", "llm"};

/// "tesseract, document_ai": the names, for messages that list the accepted values.
std::string transcription_provider_list();
std::string extraction_provider_list();

/// What a node's configuration needs to run `provider`, for messages (e.g. "transcription.
/// document_ai_endpoint and INGESTD_DOCUMENT_AI_TOKEN"); empty for those every node runs.
std::string_view provider_requirement(std::string_view provider);

/// The providers `cfg` lets a node run, the configured one first: tesseract and local always;
/// document_ai with transcription.document_ai_endpoint and INGESTD_DOCUMENT_AI_TOKEN; llm when it
/// is the configured extractor, when extraction.llm_base_url names a server other than the
/// default, or when INGESTD_LLM_API_KEY is set (the default server needs a key).
std::vector<std::string> available_transcription_providers(const config& cfg);
std::vector<std::string> available_extraction_providers(const config& cfg);

} // namespace ingestd
