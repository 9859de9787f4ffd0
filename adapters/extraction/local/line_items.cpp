// Line items: the table below a header row naming a description column and quantity, price
// or amount columns; each row's trailing numbers paired so that quantity x price = amount.
#include <algorithm>
#include <array>

#include "adapters/extraction/local/currency.hpp"
#include "adapters/extraction/local/document.hpp"
#include "adapters/extraction/local/parties.hpp"

namespace ingestd::local_rules {

namespace {

bool is_unit_word(std::string_view w) {
  static const std::array<std::string_view, 24> units{
      "pcs",  "pc", "pc.", "stk",  "stk.", "st.", "stück", "h",   "hrs",   "hr",   "hours", "std",
      "std.", "x",  "ea",  "each", "days", "day", "tage",  "tag", "units", "unit", "m",     "kg"};
  return std::find(units.begin(), units.end(), w) != units.end();
}

/// A leading position number ("1", "01", "1.") is not part of a line's description.
std::string strip_position(std::string desc) {
  size_t p = 0;
  while (p < desc.size() && is_digit(desc[p]))
    ++p;
  if (p > 0 && p <= 3 && p < desc.size()
      && (desc[p] == ' ' || (desc[p] == '.' && p + 1 < desc.size() && desc[p + 1] == ' ')))
    desc = clean_value(desc.substr(desc[p] == '.' ? p + 2 : p + 1));
  return desc;
}
} // namespace

void run_state::find_line_items() {
  // A header line names a description column and at least two of quantity, price and amount.
  size_t header = SIZE_MAX;
  for (size_t i = 0; i < raw_.size() && header == SIZE_MAX; ++i) {
    const auto& l = low_[i];
    auto has = [&](std::initializer_list<std::string_view> ws) {
      for (auto w : ws) {
        auto p = l.find(w);
        while (p != std::string::npos) {
          bool before = p == 0 || !is_letter(l[p - 1]);
          bool after = p + w.size() >= l.size() || !is_letter(l[p + w.size()]);
          if (before && after)
            return true;
          p = l.find(w, p + 1);
        }
      }
      return false;
    };
    bool desc = has({"description", "item", "items", "artikel", "bezeichnung", "beschreibung",
                     "leistung", "position", "service", "services", "product", "produkt", "details",
                     "artikelbezeichnung", "leistungsbeschreibung"});
    int others
        = (has({"qty", "quantity", "menge", "anzahl", "units", "hours", "stunden", "qty."}) ? 1 : 0)
          + (has({"unit price", "price", "rate", "einzelpreis", "preis", "unit cost", "e-preis",
                  "ep", "stückpreis", "price/unit"})
                 ? 1
                 : 0)
          + (has({"amount", "total", "line total", "betrag", "gesamt", "gesamtpreis", "summe",
                  "netto", "gesamtbetrag"})
                 ? 1
                 : 0);
    bool amount_col = has({"amount", "total", "line total", "betrag", "gesamt", "gesamtpreis",
                           "summe", "gesamtbetrag"});
    if (desc && (others >= 2 || (others == 1 && amount_col)) && find_amounts(masked_[i]).empty())
      header = i;
  }
  if (header == SIZE_MAX)
    return;
  int blank_run = 0;
  for (size_t i = header + 1; i < raw_.size(); ++i) {
    if (trim(raw_[i]).empty()) {
      if (++blank_run >= 3 && !items_.empty())
        break;
      continue;
    }
    blank_run = 0;
    bool ends = std::any_of(hits_[i].begin(), hits_[i].end(), [](const hit& h) {
      return h.k == kind::subtotal || h.k == kind::total || h.k == kind::total_weak
             || (h.k == kind::vat && h.begin < 3);
    });
    if (ends)
      break;
    // Walk back from the end over numbers, percentages, currencies and unit words.
    std::string_view line = masked_[i];
    std::vector<std::pair<size_t, size_t>> tokens;
    for (size_t p = 0; p < line.size();) {
      while (p < line.size() && line[p] == ' ')
        ++p;
      size_t s = p;
      while (p < line.size() && line[p] != ' ')
        ++p;
      if (p > s)
        tokens.emplace_back(s, p);
    }
    size_t first_trailing = tokens.size();
    for (size_t t = tokens.size(); t-- > 0;) {
      auto tok = line.substr(tokens[t].first, tokens[t].second - tokens[t].first);
      bool numeric = !tok.empty() && std::any_of(tok.begin(), tok.end(), is_digit)
                     && std::all_of(tok.begin(), tok.end(), [](char c) {
                          return is_digit(c) || c == '.' || c == ',' || c == '%' || c == '\''
                                 || c == '-' || static_cast<unsigned char>(c) >= 0x80 || c == '$';
                        });
      bool cur
          = !currency_hits(tok).empty() && std::none_of(tok.begin(), tok.end(), is_alpha_ascii);
      bool code = tok == "eur" || tok == "usd" || tok == "gbp" || tok == "chf";
      if (numeric || cur || code || tok == "%" || tok == "-" || is_unit_word(tok))
        first_trailing = t;
      else
        break;
    }
    if (first_trailing == tokens.size() || first_trailing == 0) {
      // No numbers (a wrapped description) or nothing but numbers.
      if (first_trailing == tokens.size() && !items_.empty() && tokens.size() <= 8
          && !looks_like_contact(low_[i]))
        items_.back().description += " " + clean_value(raw_[i]);
      continue;
    }
    size_t desc_end = tokens[first_trailing].first;
    std::string desc = strip_position(clean_value(std::string_view{raw_[i]}.substr(0, desc_end)));
    if (std::none_of(desc.begin(), desc.end(), is_letter))
      continue;
    auto numbers = [&](bool space_groups) {
      std::vector<amount_hit> nums;
      for (const auto& a : find_amounts(line.substr(desc_end), space_groups))
        if (!a.percent)
          nums.push_back(a);
      return nums;
    };
    auto reconciles = [](const std::vector<amount_hit>& nums) {
      for (size_t k = 2; k < nums.size(); ++k)
        if (near(round2(nums[k - 2].value * nums[k - 1].value), nums.back().value, 0.011))
          return true;
      return false;
    };
    auto nums = numbers(true);
    if (!reconciles(nums)) {
      // "1 238,40 EUR": a quantity and a price, not one grouped number.
      auto split = numbers(false);
      if (reconciles(split))
        nums = std::move(split);
    }
    if (nums.empty())
      continue;
    item it;
    it.description = desc;
    it.amount = nums.back().value;
    if (nums.size() >= 3) {
      bool paired = false;
      for (size_t k = nums.size() - 1; k >= 2 && !paired; --k) {
        double q = nums[k - 2].value, p = nums[k - 1].value;
        if (near(round2(q * p), *it.amount, 0.011 + std::fabs(*it.amount) * 1e-6)) {
          it.quantity = q;
          it.unit_price = p;
          paired = true;
          // Numbers before the quantity belong to the description ("Coffee beans 1 kg").
          if (k - 2 > 0) {
            auto d = clean_value(std::string_view{raw_[i]}.substr(0, desc_end + nums[k - 2].begin));
            if (std::any_of(d.begin(), d.end(), is_letter))
              it.description = strip_position(d);
          }
        }
      }
      if (!paired) {
        it.quantity = nums[nums.size() - 3].value;
        it.unit_price = nums[nums.size() - 2].value;
      }
    } else if (nums.size() == 2) {
      const auto& a = nums[0];
      if (!a.decimals && a.value > 0) {
        it.quantity = a.value;
        it.unit_price = round2(*it.amount / a.value);
      } else {
        it.unit_price = a.value;
        if (a.value != 0) {
          double q = *it.amount / a.value;
          if (near(q, std::round(q), 0.001))
            it.quantity = std::round(q);
        }
      }
    }
    items_.push_back(std::move(it));
  }
}

} // namespace ingestd::local_rules
