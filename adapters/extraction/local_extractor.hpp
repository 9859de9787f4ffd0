// The local rule-based extractor (the embedded default): finds invoice fields in transcription
// text with labels in English, German, French, Dutch, Spanish, Italian and Polish, no network.
// Confidence is honest: it says when it guessed. The rules live in adapters/extraction/local/.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/extraction/extractor.hpp"

namespace ingestd {

struct local_extractor_options {
  /// How to read an ambiguous date like 03/04/2024 when nothing in the document decides it
  /// (a day above 12 elsewhere, the language: all but English put the day first, or the
  /// currency: USD reads month first, GBP, INR and PLN day first).
  bool ambiguous_dates_day_first = false;
};

/// Runs inline (the rules are cheap): `done` is called exactly once, before extract() returns.
/// model "local-rules", zero tokens.
class local_extractor final : public extractor {
public:
  explicit local_extractor(local_extractor_options opts = {});
  void extract(std::string text, callback<extraction> done) override;
  std::string name() const override { return "local"; }
  bool deterministic() const override { return true; }
  bool runs_inline() const override { return true; }

  /// The synchronous core: the extraction for `text` (structured_data matches the schema).
  extraction run(std::string_view text) const;

private:
  local_extractor_options opts_;
};

/// The parsing rules, exposed for unit tests.
namespace local_rules {

/// A number as printed on an invoice: "1,234.56", "1.234,56", "1 234,56", "1'234.50", "19,00",
/// "1234". Nullopt when `s` (trimmed, optional currency symbol or code) is not exactly one amount.
std::optional<double> parse_amount(std::string_view s);

/// The first date in `s` as YYYY-MM-DD: 2024-03-15, 15.03.2024, 03/15/2024, 15 March 2024,
/// 15. März 2024, March 15, 2024, ... `day_first` decides ambiguous numeric dates.
std::optional<std::string> parse_date(std::string_view s, bool day_first = false);

/// The ISO 4217 code for a symbol, code or word in `s` ("€" -> "EUR", "zł" -> "PLN"), or nullopt.
std::optional<std::string> find_currency(std::string_view s);

} // namespace local_rules

} // namespace ingestd
