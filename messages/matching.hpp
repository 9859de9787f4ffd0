// What the matching stage works with: a document as matching sees it, and the edges a
// match decision gives. Built by adapters/matching (features), stored and retrieved by
// adapters/db (matching_repository), decided by a matcher (adapters/matching/matcher.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "messages/uuid.hpp"

namespace ingestd {

/// The values candidate retrieval and the match decision use, derived from a document's
/// extraction (structured_data) and its transcription text: the pre-processing for matching,
/// safe to redo (the same input gives the same features).
struct match_features {
  /// "invoice", "credit_note", "receipt", "purchase_order" or "other".
  std::string kind;
  /// The document's own number (invoice number), normalized: upper-case letters and digits only.
  std::string number;
  /// Numbers the document refers to besides its own (the invoice a credit note corrects, purchase
  /// order and order numbers), normalized as `number`, without duplicates.
  std::vector<std::string> references;
  /// The supplier as extracted, and normalized (lower case, punctuation and legal forms such as
  /// GmbH, Ltd, Inc, S.A., B.V. removed, spaces collapsed).
  std::string counterparty;
  std::string normalized_counterparty;
  std::optional<double> total;
  /// ISO 4217 code, or empty.
  std::string currency;
  /// The document date as YYYY-MM-DD, or empty.
  std::string date;
  /// The transcription normalized for search (lower case, whitespace collapsed), at most 20,000
  /// characters, and the SHA-256 (hex) of it: equal hashes are the same content.
  std::string searchable_text;
  std::string text_hash;
};

/// A document of one tenant, as candidate retrieval returns it and the matcher compares it.
struct match_document {
  uuid id;
  uuid tenant_id;
  std::string file_name;
  match_features features;
  /// The document's structured_data (JSON), for the LLM matcher.
  std::string structured_data;
};

/// Kinds of edge between two documents.
namespace match_kind {
/// The same content (equal text hashes): one document sent twice in different files.
inline constexpr const char* duplicate = "duplicate";
/// The same invoice (number, counterparty and total agree): e.g. a PDF and a scan of it.
inline constexpr const char* same_invoice = "same_invoice";
/// A credit note that refers to the invoice's number.
inline constexpr const char* credit_note = "credit_note";
/// An invoice that refers to a purchase order's (or order's) number.
inline constexpr const char* purchase_order = "purchase_order";
/// Same counterparty, amounts and dates within tolerance, nothing more certain.
inline constexpr const char* related = "related";
} // namespace match_kind

/// One edge of a match decision, seen from the document being matched.
struct match_edge {
  uuid other;
  std::string kind;
  /// 0..1.
  double confidence = 0;
  /// Why, for people: "invoice number INV-2024-001, counterparty and total agree".
  std::string reason;
};

/// A stored edge (the pair once, document_a_id < document_b_id), for status and the API.
struct stored_match {
  uuid document_a;
  uuid document_b;
  std::string kind;
  double confidence = 0;
  std::string reason;
};

} // namespace ingestd
