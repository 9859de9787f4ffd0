// The local rule-based extractor's entry points. The rules live in adapters/extraction/local/, one
// file per family around the document representation of local/document.hpp:
//   text.*          lines, lower case, cells              labels*.cpp  label tables per language
//   dates.*         dates with month names, day orders    amounts.*    numbers in every style
//   currency.*      codes, symbols and words              document.*   lines + conventions
//   keyed_fields    invoice number, dates, totals          parties.*    supplier and customer
//   identifiers     VAT id, currency                       line_items   the item table
//   receipts        till receipts: the payable total, the merchant
//   reconcile       derived figures, confidence, JSON
#include "adapters/extraction/local_extractor.hpp"

#include <exception>

#include "adapters/extraction/local/amounts.hpp"
#include "adapters/extraction/local/currency.hpp"
#include "adapters/extraction/local/dates.hpp"
#include "adapters/extraction/local/document.hpp"
#include "adapters/extraction/local/text.hpp"
#include "messages/text.hpp"

namespace ingestd {

using local_rules::run_state;

local_extractor::local_extractor(local_extractor_options opts) : opts_(opts) {}

extraction local_extractor::run(std::string_view text) const {
  // Values are copied from the text into JSON: bytes that are not UTF-8 become U+FFFD first, so
  // that structured_data is always valid JSON text (a PDF's text layer may hold anything).
  auto clean = clean_text(text);
  run_state state{clean, opts_};
  return state.finish();
}

void local_extractor::extract(std::string text, callback<extraction> done) {
  result<extraction> r = [&]() -> result<extraction> {
    try {
      return run(text);
    } catch (const std::exception& e) {
      // std::regex may throw on pathological input (error_complexity / error_stack).
      return error::make_transient("extract.local_failed", e.what());
    }
  }();
  done(std::move(r));
}

namespace local_rules {

std::optional<double> parse_amount(std::string_view s) {
  std::string low = lower(trim(s));
  // Strip currency markers at either end.
  for (int pass = 0; pass < 2; ++pass) {
    auto hits = currency_hits(low);
    for (auto it = hits.rbegin(); it != hits.rend(); ++it) {
      size_t len = 0;
      for (const auto& m : currency_markers())
        if (m.code == it->second && low.compare(it->first, m.text.size(), m.text) == 0) {
          len = m.text.size();
          break;
        }
      if (it->first == 0 || it->first + len == low.size())
        low.erase(it->first, len);
    }
    low = std::string{trim(low)};
  }
  bool negative = false;
  if (!low.empty() && low.front() == '-') {
    negative = true;
    low = std::string{trim(std::string_view{low}.substr(1))};
  }
  auto hits = find_amounts(low);
  if (hits.size() != 1 || hits[0].begin != 0 || hits[0].end != low.size() || hits[0].percent)
    return std::nullopt;
  return negative ? -hits[0].value : hits[0].value;
}

std::optional<std::string> parse_date(std::string_view s, bool day_first) {
  auto hits = find_dates(lower(s), day_first);
  if (hits.empty())
    return std::nullopt;
  return hits.front().iso;
}

std::optional<std::string> find_currency(std::string_view s) {
  auto hits = currency_hits(lower(s));
  if (hits.empty())
    return std::nullopt;
  return std::string{hits.front().second};
}

} // namespace local_rules

} // namespace ingestd
