// Currency markers as codes, symbols and words.
#include "adapters/extraction/local/currency.hpp"

#include <array>

#include "adapters/extraction/local/text.hpp"

namespace ingestd::local_rules {

const std::vector<currency_marker>& currency_markers() {
  static const std::vector<currency_marker> all{
      {"\xE2\x82\xAC", "EUR", false}, // €
      {"\xC2\xA3", "GBP", false},     // £
      {"us$", "USD", false},
      {"$", "USD", false},
      {"eur", "EUR", true},
      {"euro", "EUR", true},
      {"usd", "USD", true},
      {"gbp", "GBP", true},
      {"chf", "CHF", true},
      {"sfr", "CHF", true},
      {"fr.", "CHF", true},
      {"jpy", "JPY", true},
      {"sek", "SEK", true},
      {"pln", "PLN", true},
      {"\xE2\x82\xB9", "INR", false}, // ₹
      {"inr", "INR", true},
      {"rs.", "INR", true},
      {"rs", "INR", true},
      {"rupees", "INR", true},
      {"z\xC5\x82", "PLN", true}, // zł
      {"z\xC5\x82otych", "PLN", true},
      {"zt", "PLN", true}, // zł as OCR without Polish reads it
      {"zl", "PLN", true},
      {"euros", "EUR", true},
      {"dkk", "DKK", true},
      {"nok", "NOK", true},
      {"czk", "CZK", true},
      {"k\xC4\x8D", "CZK", true}, // Kč
      {"huf", "HUF", true},
      {"cad", "CAD", true},
      {"aud", "AUD", true},
  };
  return all;
}

std::vector<std::pair<size_t, std::string_view>> currency_hits(std::string_view low) {
  // The bytes a marker begins with: most bytes of a page begin none.
  static const std::array<bool, 256> first = [] {
    std::array<bool, 256> f{};
    for (const auto& m : currency_markers())
      f[static_cast<unsigned char>(m.text[0])] = true;
    return f;
  }();
  std::vector<std::pair<size_t, std::string_view>> out;
  for (size_t i = 0; i < low.size(); ++i) {
    if (!first[static_cast<unsigned char>(low[i])])
      continue;
    for (const auto& m : currency_markers()) {
      if (low.compare(i, m.text.size(), m.text) != 0)
        continue;
      // A symbol glued to a word is a letter misread ("$wiatłowód" for "Światłowód").
      if (!m.word && i + m.text.size() < low.size() && is_alpha_ascii(low[i + m.text.size()]))
        continue;
      if (m.word) {
        bool before_ok = i == 0 || !is_letter(low[i - 1]);
        size_t end = i + m.text.size();
        bool after_ok = end >= low.size() || !is_letter(low[end]) || m.text.back() == '.';
        if (!before_ok || !after_ok)
          continue;
      }
      out.emplace_back(i, m.code);
      i += m.text.size() - 1;
      break;
    }
  }
  return out;
}

} // namespace ingestd::local_rules
