// The pre-processing for matching: what matching reads from a document's extraction
// (structured_data) and transcription text, as match_features, and the normalizers behind it
// (also used by candidate retrieval, so that both sides normalize alike).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/matching.hpp"

namespace ingestd {

/// The features of one document. `structured_data_json` is the extraction (the schema of
/// config/extraction_schema.json; any JSON, or none, is accepted: what is missing or malformed
/// is read from the text by the local extraction rules instead), `transcription_text` the text
/// it was extracted from. Never throws; the same input gives the same features.
///   kind: "credit_note" when the document's header calls it one (credit note, credit memo,
///     Gutschrift, avoir, creditnota, nota de crédito, ...) or its total is negative;
///     "purchase_order" or "receipt" when its title says so; else "invoice" when it has a
///     number, else "other".
///   number: the document's own number (a credit note's own number label wins over an extracted
///     invoice number that is in fact the invoice it refers to).
///   references: numbers after reference labels ("original invoice", "credit note for invoice",
///     "refers to invoice", "invoice no.", "PO", "purchase order", "order no.", "Bestellnummer",
///     "Rechnung Nr.", "facture n°", ...), normalized, the own number excluded, in order of
///     appearance, without duplicates (at most 32).
match_features describe_for_matching(std::string_view structured_data_json,
                                     std::string_view transcription_text);

/// The longest searchable_text, in bytes (so also in characters).
inline constexpr size_t max_searchable_text_bytes = 20'000;

/// A document number as matching compares it: ASCII letters upper-cased, digits kept, everything
/// else dropped ("inv-2024/0117" -> "INV20240117").
std::string normalize_number(std::string_view number);

/// A counterparty name as matching compares it: lower case (ASCII and Latin-1 letters), dots
/// dropped, other punctuation as spaces, trailing legal forms removed (GmbH, AG, KG, Ltd,
/// Limited, Inc, LLC, plc, Corp, S.A., SARL, SAS, B.V., N.V., S.L., S.p.A., S.r.l., Sp. z o.o.,
/// e.K., & Co. ...) and a document title printed beside the name ("Acme Inc. CREDIT NOTE"),
/// spaces collapsed: "Müller & Söhne GmbH" -> "müller söhne".
std::string normalize_counterparty(std::string_view name);

/// The text for search and the content hash: valid UTF-8 (invalid bytes as U+FFFD, NUL
/// dropped), lower case (ASCII and Latin-1), runs of whitespace as one space, trimmed, cut to
/// max_searchable_text_bytes on a character boundary.
std::string searchable_text(std::string_view text);

/// Lower-case hex SHA-256 of `data` (64 characters).
std::string sha256_hex(std::string_view data);

/// The similarity of two normalized counterparties, 0..1: the trigram similarity pg_trgm
/// computes (each word padded with two spaces in front and one behind), so the local matcher
/// and candidate retrieval agree.
double counterparty_similarity(std::string_view a, std::string_view b);

} // namespace ingestd
