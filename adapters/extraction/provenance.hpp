// Where on the page each extracted value came from: the value found again among the page's
// words (Tesseract's word boxes for scans, the PDF's text boxes for native pages), whichever
// extractor gave it, the local rules or an LLM. The review desk highlights the box when a field
// has focus; `ingestd extract --json` prints it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "messages/transcription.hpp"

namespace ingestd {

/// A field's value on a page: the words it was read from (joined by spaces) and their box.
struct field_source {
  std::string field;
  int32_t page = 1;
  /// The words' text and the box around them, as fractions of the page.
  page_word span;
};

/// The fields of `structured_data` (the extraction schema's JSON) found among `t`'s words, in
/// the schema's order. Amounts (subtotal, vat_amount, total) are matched by value in any
/// printed style ("1.234,56", "1 234.56 EUR"), the last one on the document (totals come after
/// the lines); dates by the day they name in any order or language; the other strings by their
/// letters and digits (spacing and punctuation aside), the first one on the document. A field
/// whose value is empty, or not on any page, has no source. Line items: each one's description
/// (in order down the document) and its numbers on the description's line, named
/// "line_items[0].amount" and so on.
std::vector<field_source> locate_fields(std::string_view structured_data, const transcription& t);

/// {"total": {"page": 1, "box": [left, top, right, bottom], "text": "119,00"}, ...}
std::string to_json(const std::vector<field_source>& sources);

} // namespace ingestd
