// The review desk's HTML: the login form, the queue page and the document page, rendered on
// the server with inline CSS and a little inline JavaScript (no external assets).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "adapters/db/review_repository.hpp"
#include "review/review_service.hpp"

namespace ingestd {

/// The Content-Security-Policy of every desk answer: only the pages' own style sheet and scripts
/// (by hash), images and requests to the desk itself, no framing, forms posting to the desk only.
const std::string& content_security_policy();

/// `s` with &, <, >, " and ' escaped for HTML text and attribute values.
std::string html_escape(std::string_view s);

/// The login form; `open`: no token field (the desk has none configured).
std::string login_page(std::string_view error, bool open);

struct page_context {
  std::string reviewer;
  std::string csrf;
  std::vector<uuid> tenants;
};

/// The queue: counts by reason, the filters, and one row per document (oldest first).
/// What reviewers taught about the suppliers, each fact with a Forget button.
std::string knowledge_page(const page_context& ctx, const std::vector<learned_fact>& facts);

std::string queue_page(const page_context& ctx, const review_queue& queue,
                       const review_queue_filter& filter, const std::string& tenant_filter);

struct document_view {
  const review_document* doc = nullptr;
  std::vector<review_finding> findings;
  /// The latest transcription, with its pages' words (empty when there is none).
  transcription reading;
  /// The next document in the queue (empty when none).
  std::string next_id;
  /// The providers a reprocess may choose here (the reprocess form's choices).
  node_providers providers;
};

/// The locale the desk shows a document's amounts and dates in (a BCP 47 tag such as "de-DE"):
/// the language of its transcription (adapters/ocr/language_guess), with the country its currency
/// names where the language has several ("en-US" for USD, "de-CH" for CHF); empty when the
/// language is not clear, and the desk then shows the stored form (1234.56, 2024-03-01).
std::string document_locale(std::string_view transcription, std::string_view currency);

/// The page image beside a form with one input per field, the failed checks at their fields,
/// the actions (reprocess with a choice of providers), the transcription, the audit trail, matches,
/// cluster and earlier reviews.
std::string document_page(const page_context& ctx, const document_view& view);

} // namespace ingestd
