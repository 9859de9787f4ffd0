// The document as the rules see it: lines, their dates and labels, and the conventions the
// document follows (which order ambiguous numeric dates are in).
#include "adapters/extraction/local/document.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "adapters/extraction/local/currency.hpp"
#include "adapters/extraction/local/text.hpp"

namespace ingestd::local_rules {

run_state::run_state(std::string_view text, const local_extractor_options& opts)
    : opts_(opts), raw_(split_lines(text)) {
  for (const auto& l : raw_) {
    low_.push_back(lower(l));
    hits_.push_back(find_labels(low_.back()));
  }
  decide_conventions();
  for (size_t i = 0; i < raw_.size(); ++i) {
    dates_.push_back(find_dates(low_[i], day_first_));
    // Amounts are read with dates blanked out, so 15.03.2024 never becomes 15.03.
    std::string masked = low_[i];
    for (const auto& d : dates_.back())
      std::fill(masked.begin() + static_cast<long>(d.begin),
                masked.begin() + static_cast<long>(d.end), ' ');
    masked_.push_back(masked);
  }
}

void run_state::decide_conventions() {
  std::string all;
  for (const auto& l : low_)
    all += l + "\n";
  for (std::string_view w :
       {"rechnung", "datum", "mwst", "ust", "betrag", "summe", "netto", "f\xC3\xA4llig"})
    if (all.find(w) != std::string::npos)
      german_ = true;
  // Ambiguous numeric dates: British (GBP) and German documents put the day first, American
  // ones the month; an English document in euros is read as the options say.
  size_t usd = 0, gbp = 0, day_first_currency = 0;
  for (const auto& [pos, code] : currency_hits(all)) {
    usd += code == "USD" ? 1 : 0;
    gbp += code == "GBP" ? 1 : 0;
    day_first_currency += code == "INR" || code == "PLN" ? 1 : 0;
  }
  // Every language but English writes the day first; two labels in one make it the document's.
  std::map<std::string_view, int> language_hits;
  for (const auto& line : hits_)
    for (const auto& h : line)
      if (h.language != "en" && h.k != kind::qualifier && h.k != kind::net_qualifier)
        ++language_hits[h.language];
  bool foreign = std::any_of(language_hits.begin(), language_hits.end(),
                             [](const auto& e) { return e.second >= 2; });
  day_first_ = opts_.ambiguous_dates_day_first;
  if (usd > gbp)
    day_first_ = false;
  else if (gbp > usd || german_ || foreign || day_first_currency > 0)
    day_first_ = true;
  // A slash date whose first part exceeds 12 settles the order for the whole document:
  // `(^|[^0-9])(\d{1,2})/(\d{1,2})/(\d{2,4})`, scanned as dates.cpp scans its patterns.
  struct slash_date {
    size_t end;
    std::string_view a, b;
  };
  auto slash_date_at = [&](size_t i) -> std::optional<slash_date> {
    size_t a = digits_at(all, i);
    if (a < 1 || a > 2 || !byte_in(all, i + a, "/"))
      return {};
    size_t j = i + a + 1, b = digits_at(all, j);
    if (b < 1 || b > 2 || !byte_in(all, j + b, "/"))
      return {};
    size_t k = j + b + 1, year = digits_at(all, k);
    if (year < 2)
      return {};
    return slash_date{k + std::min<size_t>(year, 4), std::string_view{all}.substr(i, a),
                      std::string_view{all}.substr(j, b)};
  };
  bool settled = false;
  each_match(
      all, [](char c) { return !is_digit(c); }, slash_date_at,
      [&](const slash_date& d) {
        if (settled)
          return;
        int a = std::stoi(std::string{d.a}), b = std::stoi(std::string{d.b});
        // (A part over 31 is no day: OCR's 9 for a 0, see dates.cpp.)
        if (a > 12 && a <= 31 && b <= 12) {
          day_first_ = true;
          settled = true;
        } else if (b > 12 && b <= 31 && a <= 12) {
          day_first_ = false;
          settled = true;
        }
      });
}

} // namespace ingestd::local_rules
