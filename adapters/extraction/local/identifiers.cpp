// Identifiers: the supplier's VAT id (labelled, or by its country pattern outside the
// customer's block) and the document's currency (labelled, or the most frequent marker).
#include <algorithm>
#include <map>
#include <optional>

#include "adapters/extraction/local/currency.hpp"
#include "adapters/extraction/local/document.hpp"
#include "adapters/extraction/local/identifiers.hpp"
#include "adapters/extraction/local/text.hpp"

namespace ingestd::local_rules {

namespace {

bool upper_or_digit(std::string_view s, size_t i) {
  return i < s.size() && ((s[i] >= 'A' && s[i] <= 'Z') || is_digit(s[i]));
}

struct vat_match {
  size_t begin = 0;
  size_t end = 0;
};

/// `(?:DE|ATU|GB|FR|NL|BE|IT|ES|LU|DK|SE|FI|IE|PL|CZ|PT|AT)(?: ?[0-9A-Z]){8,12}
///  |CHE[- ]?\d{3}\.?\d{3}\.?\d{3}(?: ?(?:MWST|TVA|IVA))?` at `i` (tests/unit/extraction compares
/// it with that regular expression).
std::optional<vat_match> vat_id_at(std::string_view s, size_t i) {
  static constexpr std::string_view prefixes[]
      = {"DE", "ATU", "GB", "FR", "NL", "BE", "IT", "ES", "LU",
         "DK", "SE",  "FI", "IE", "PL", "CZ", "PT", "AT"};
  // Every prefix begins with one of these.
  if (!byte_in(s, i, "ABCDEFGILNPS"))
    return {};
  auto rest = s.substr(i);
  for (auto prefix : prefixes) {
    if (!rest.starts_with(prefix))
      continue;
    size_t end = i + prefix.size();
    int n = 0;
    for (; n < 12; ++n) {
      if (byte_in(s, end, " ") && upper_or_digit(s, end + 1))
        end += 2;
      else if (upper_or_digit(s, end))
        end += 1;
      else
        break;
    }
    if (n >= 8)
      return vat_match{i, end};
  }
  if (!rest.starts_with("CHE"))
    return {};
  size_t end = i + 3;
  end += byte_in(s, end, "- ") ? 1 : 0;
  for (int group = 0; group < 3; ++group) {
    if (group > 0)
      end += byte_in(s, end, ".") ? 1 : 0;
    if (digits_at(s, end) < 3)
      return {};
    end += 3;
  }
  for (auto tax : {"MWST", "TVA", "IVA"}) {
    std::string_view t{tax};
    if (byte_in(s, end, " ") && s.substr(end + 1).starts_with(t))
      return vat_match{i, end + 1 + t.size()};
  }
  for (auto tax : {"MWST", "TVA", "IVA"}) {
    std::string_view t{tax};
    if (s.substr(end).starts_with(t))
      return vat_match{i, end + t.size()};
  }
  return vat_match{i, end};
}

} // namespace

std::vector<std::string_view> vat_id_candidates(std::string_view upper) {
  std::vector<std::string_view> out;
  each_match(
      upper, [&](char c) { return !((c >= 'A' && c <= 'Z') || is_digit(c)); },
      [&](size_t i) { return vat_id_at(upper, i); },
      [&](const vat_match& m) { out.push_back(upper.substr(m.begin, m.end - m.begin)); });
  return out;
}

void run_state::find_vat_id() {
  // A labelled id is taken as printed (spaces inside digit groups removed), whatever its country:
  // "VAT ID US94-1234567", "USt-IdNr. DE 123 456 789".
  size_t first_customer = SIZE_MAX;
  size_t customer_column = 0;
  for (size_t i = 0; i < raw_.size() && first_customer == SIZE_MAX; ++i)
    for (const auto& h : hits_[i])
      if (h.k == kind::customer && first_customer == SIZE_MAX) {
        first_customer = i;
        customer_column = h.begin;
      }
  for (size_t i = 0; i < raw_.size() && !supplier_vat_id_.found(); ++i) {
    for (size_t h = 0; h < hits_[i].size(); ++h) {
      if (hits_[i][h].k != kind::vat_id)
        continue;
      // The customer's id sits in the customer's block (below its label, in its column).
      if (first_customer != SIZE_MAX && i > first_customer && i <= first_customer + 5
          && hits_[i][h].begin + 5 >= customer_column && hits_[i][h].begin <= customer_column + 5)
        continue;
      auto [b, e] = segment(i, h);
      std::string seg = clean_value(std::string_view{raw_[i]}.substr(b, e - b));
      std::vector<std::string> toks;
      for (size_t p = 0; p < seg.size();) {
        auto sp = seg.find(' ', p);
        if (sp == std::string::npos)
          sp = seg.size();
        if (sp > p)
          toks.push_back(seg.substr(p, sp - p));
        p = sp + 1;
      }
      std::string id;
      for (size_t t = 0; t < toks.size(); ++t) {
        const auto& tok = toks[t];
        bool digits = std::any_of(tok.begin(), tok.end(), is_digit);
        bool prefix = tok.size() <= 3 && std::all_of(tok.begin(), tok.end(), [](char c) {
                        return c >= 'A' && c <= 'Z';
                      });
        if (id.empty()) {
          if (digits || (prefix && t + 1 < toks.size() && is_digit(toks[t + 1][0])))
            id = tok;
          continue;
        }
        if (std::all_of(tok.begin(), tok.end(), is_digit) && tok.size() <= 4)
          id += tok;
        else
          break;
      }
      while (!id.empty() && (id.back() == ',' || id.back() == ';' || id.back() == '.'))
        id.pop_back();
      if (std::count_if(id.begin(), id.end(), is_digit) >= 6) {
        supplier_vat_id_.set(id, source::label);
        return;
      }
    }
  }
  struct candidate {
    std::string value;
    bool labelled;
    bool customer_block;
  };
  std::vector<candidate> found;
  size_t customer_line = SIZE_MAX;
  for (size_t i = 0; i < raw_.size(); ++i)
    for (const auto& h : hits_[i])
      if (h.k == kind::customer && customer_line == SIZE_MAX)
        customer_line = i;
  for (size_t i = 0; i < raw_.size(); ++i) {
    std::string up = raw_[i];
    for (auto& c : up)
      if (c >= 'a' && c <= 'z')
        c = static_cast<char>(c - 'a' + 'A');
    bool labelled = std::any_of(hits_[i].begin(), hits_[i].end(),
                                [](const hit& h) { return h.k == kind::vat_id; });
    // IBANs start with a country code too.
    if (low_[i].find("iban") != std::string::npos || low_[i].find("konto") != std::string::npos)
      continue;
    for (auto printed : vat_id_candidates(up)) {
      std::string v;
      for (char c : printed)
        if (c != ' ' && c != '-' && c != '.')
          v += c;
      // Country prefix plus at least 8 characters of which most are digits.
      auto digits = std::count_if(v.begin(), v.end(), is_digit);
      if (digits < 8)
        continue;
      if (v.rfind("DE", 0) == 0 && v.size() != 11)
        continue;
      if (v.rfind("ATU", 0) == 0 && v.size() != 11)
        continue;
      bool in_customer = customer_line != SIZE_MAX && i >= customer_line && i <= customer_line + 6;
      found.push_back({v, labelled, in_customer});
    }
  }
  // The supplier's id: labelled and outside the customer's block first.
  for (int pass = 0; pass < 3 && !supplier_vat_id_.found(); ++pass)
    for (const auto& c : found) {
      bool ok = pass == 0   ? (c.labelled && !c.customer_block)
                : pass == 1 ? !c.customer_block
                            : true;
      if (ok) {
        supplier_vat_id_.set(c.value, pass == 0 ? source::label : source::guess);
        break;
      }
    }
}

void run_state::find_currency() {
  for (size_t i = 0; i < raw_.size() && !currency_.found(); ++i)
    for (size_t h = 0; h < hits_[i].size(); ++h)
      if (hits_[i][h].k == kind::currency) {
        auto [b, e] = segment(i, h);
        auto hitsc = currency_hits(std::string_view{low_[i]}.substr(b, e - b));
        if (!hitsc.empty()) {
          currency_.set(std::string{hitsc.front().second}, source::label);
          break;
        }
      }
  if (currency_.found())
    return;
  // The most frequent marker on lines with amounts; a tie goes to the first seen.
  std::map<std::string_view, int> counts;
  std::vector<std::string_view> order;
  for (size_t i = 0; i < raw_.size(); ++i) {
    if (find_amounts(masked_[i]).empty())
      continue;
    for (const auto& [pos, code] : currency_hits(low_[i])) {
      if (counts[code]++ == 0)
        order.push_back(code);
    }
  }
  std::string_view best;
  int best_count = 0;
  for (auto code : order)
    if (counts[code] > best_count) {
      best = code;
      best_count = counts[code];
    }
  if (!best.empty()) {
    currency_.set(std::string{best}, source::label);
    return;
  }
  // No marker at all (till receipts often print none): the currency of the supplier's country,
  // from its tax id's country prefix ("DE", "GB") or else the language of the id's label
  // ("P.IVA", "NIP", "GSTIN").
  static const std::map<std::string_view, std::string_view> by_prefix{
      {"AT", "EUR"}, {"BE", "EUR"}, {"DE", "EUR"}, {"ES", "EUR"}, {"FI", "EUR"},
      {"FR", "EUR"}, {"IE", "EUR"}, {"IT", "EUR"}, {"LU", "EUR"}, {"NL", "EUR"},
      {"PT", "EUR"}, {"GB", "GBP"}, {"PL", "PLN"}, {"CH", "CHF"}};
  if (supplier_vat_id_.found() && supplier_vat_id_.value->size() > 2)
    if (auto it = by_prefix.find(std::string_view{*supplier_vat_id_.value}.substr(0, 2));
        it != by_prefix.end()) {
      currency_.set(std::string{it->second}, source::guess);
      return;
    }
  for (size_t i = 0; i < raw_.size(); ++i)
    for (const auto& h : hits_[i]) {
      if (h.k != kind::vat_id)
        continue;
      auto name = std::string_view{low_[i]}.substr(h.begin, h.end - h.begin);
      std::string_view code = h.language == "pl"   ? "PLN"
                              : h.language == "en" ? (name.substr(0, 5) == "gstin" ? "INR" : "")
                                                   : "EUR";
      if (!code.empty())
        currency_.set(std::string{code}, source::guess);
      return;
    }
}

} // namespace ingestd::local_rules
