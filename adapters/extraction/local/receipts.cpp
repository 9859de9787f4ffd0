// Till receipts: told apart from invoices by their narrow lines and their tender, change and
// rounding lines; read with rules of their own where the invoice rules go wrong on them:
//   - the payable total is the candidate the receipt's own arithmetic supports (tendered minus
//     change, a card payment of that amount, the items and the tax adding up to it), and the
//     payable line after a cash rounding, never the tendered cash, the change or a tax line;
//   - the merchant is the name at the top, joined again when the till wrapped it over two lines.
#include <algorithm>
#include <cmath>
#include <regex>
#include <string>

#include "adapters/extraction/local/document.hpp"

namespace ingestd::local_rules {

namespace {

bool has_kind(const std::vector<hit>& hs, kind k) {
  return std::any_of(hs.begin(), hs.end(), [k](const hit& h) { return h.k == k; });
}

size_t letters_in(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), is_letter));
}

/// A name without what OCR read from specks before it: a token with signs no name has ("|",
/// "ga;"), or a short lower-case one before a capitalised word ("ee Eetcafé").
std::string without_leading_specks(std::string name) {
  for (;;) {
    auto sp = name.find(' ');
    if (sp == std::string::npos)
      return name;
    std::string_view token{name.data(), sp};
    bool signs = std::any_of(token.begin(), token.end(), [](char c) {
      return !is_letter(c) && !is_digit(c) && c != '.' && c != '&' && c != '-' && c != '\'';
    });
    bool speck = token.size() <= 3 && std::all_of(token.begin(), token.end(), [](char c) {
                   return c >= 'a' && c <= 'z';
                 });
    char next = sp + 1 < name.size() ? name[sp + 1] : '\0';
    bool capital_next = (next >= 'A' && next <= 'Z') || static_cast<unsigned char>(next) >= 0xC0;
    if (!signs && !(speck && capital_next))
      return name;
    name.erase(0, sp + 1);
  }
}

} // namespace

std::optional<double> run_state::amount_at_end(size_t i) const {
  std::optional<double> last;
  for (const auto& a : find_amounts(masked_[i]))
    if (!a.percent && a.decimals)
      last = a.value;
  return last;
}

bool run_state::looks_like_receipt() const {
  // Till paper is 32 to 48 characters wide; an invoice's rows are longer.
  std::vector<size_t> widths;
  for (const auto& l : raw_)
    if (auto t = trim(l); letters_in(t) >= 3)
      widths.push_back(t.size());
  if (widths.size() < 4)
    return false;
  std::sort(widths.begin(), widths.end());
  if (widths[widths.size() * 9 / 10] > 60)
    return false;
  // A line that starts with a tender, change or rounding label (its amount may be on it, or
  // where OCR put the column of amounts).
  for (size_t i = 0; i < raw_.size(); ++i) {
    auto lead = raw_[i].find_first_not_of(" \t");
    for (const auto& h : hits_[i])
      if ((h.k == kind::tender || h.k == kind::change || h.k == kind::rounding) && h.begin <= lead)
        return true;
  }
  return false;
}

void run_state::read_receipt() {
  receipt_ = true;
  // The amounts at the ends of lines, in reading order. OCR may have lost labels, or put the
  // amounts after all the labels as a column of their own, so the arithmetic below works on the
  // order of the amounts alone; labels add their weight where they were read.
  struct amount {
    double value;
    size_t line;
    bool quantity;    // "3 x 2,05": a unit price beside a quantity, not an item's amount
    bool total_label; // on a TOTAL line, without a tax, subtotal, tender or change label
    bool tender;
  };
  static const std::regex quantity{R"((^|\s)\d{1,3} ?[x\*] ?\d)"};
  std::vector<amount> as;
  std::optional<size_t> rounding_line;
  for (size_t i = 0; i < raw_.size(); ++i) {
    auto v = amount_at_end(i);
    if (!v)
      continue;
    const auto& hs = hits_[i];
    if (has_kind(hs, kind::rounding))
      rounding_line = i;
    bool other = has_kind(hs, kind::vat) || has_kind(hs, kind::subtotal)
                 || has_kind(hs, kind::tender) || has_kind(hs, kind::change)
                 || has_kind(hs, kind::rounding) || has_kind(hs, kind::net_qualifier);
    bool total_label = (has_kind(hs, kind::total) || has_kind(hs, kind::total_weak)) && !other;
    as.push_back({*v, i, std::regex_search(low_[i], quantity), total_label,
                  has_kind(hs, kind::tender) && !has_kind(hs, kind::change)});
  }
  size_t first_tender = raw_.size();
  for (const auto& a : as)
    if (a.tender)
      first_tender = std::min(first_tender, a.line);

  // Each amount's support as the payable total.
  constexpr double candidate_tolerance = 0.011;
  auto same = [](double a, double b) { return near(a, b, candidate_tolerance); };
  int best_support = 0;
  std::optional<size_t> best;
  for (size_t k = 0; k < as.size(); ++k) {
    const auto& c = as[k];
    if (c.value <= 0 || c.quantity)
      continue;
    int support = 0;
    if (c.total_label)
      support += rounding_line && c.line > *rounding_line ? 3 : 2;
    // Tendered minus change: two of the next few amounts.
    for (size_t i = k + 1; i < as.size() && i <= k + 4; ++i)
      for (size_t j = i + 1; j < as.size() && j <= k + 5; ++j)
        if (as[i].value > c.value && same(as[i].value - as[j].value, c.value)) {
          support += 3;
          i = j = as.size();
        }
    // Paid exactly: a card (or cash without change) for the same amount right after it.
    if (k + 1 < as.size() && same(as[k + 1].value, c.value) && as[k + 1].tender)
      support += 2;
    // The items just above add up to it; or they add up to the amount two above, which with
    // the one above (the tax added, or a cash rounding) makes it.
    auto run_sums_to = [&](size_t end, double target) {
      double sum = 0;
      int items = 0;
      for (size_t m = end; m-- > 0;) {
        if (as[m].quantity)
          continue;
        sum += as[m].value;
        ++items;
        if (items >= 2 && same(round2(sum), target))
          return true;
        if (sum > target + 1)
          return false;
      }
      return false;
    };
    bool items_add_up = run_sums_to(k, c.value);
    bool two_above_add_up
        = k >= 2 && same(round2(as[k - 2].value + as[k - 1].value), c.value)
          && (run_sums_to(k - 2, as[k - 2].value) || std::fabs(as[k - 1].value) < 0.05);
    if (items_add_up || two_above_add_up)
      support += 2;
    // Of equal support, the later amount: the payable total comes after the subtotal and the
    // rounding; never an amount after the tender began.
    if (support > 0
        && (support > best_support || (support == best_support && c.line <= first_tender))) {
      best_support = support;
      best = k;
    }
  }
  // Cash handed over covers the total: a total above the cash tendered with change given is
  // misread, and the cash less the change is the total.
  std::optional<double> cash_less_change;
  for (size_t k = 0; k + 1 < as.size(); ++k)
    if (as[k].tender && has_kind(hits_[as[k + 1].line], kind::change)
        && as[k].value > as[k + 1].value) {
      cash_less_change = round2(as[k].value - as[k + 1].value);
      if (best && as[*best].value > as[k].value + candidate_tolerance)
        best.reset();
      break;
    }
  if (best) {
    total_.set(as[*best].value, best_support >= 2 ? source::label : source::guess);
    receipt_total_support_ = best_support;
  } else if (cash_less_change) {
    total_.set(*cash_less_change, source::derived);
    receipt_total_support_ = 3;
  } else if (!total_.found())
    // Nothing supported: the amount just above the tender.
    for (size_t k = as.size(); k-- > 0;)
      if (as[k].line < first_tender && first_tender < raw_.size() && !as[k].quantity) {
        total_.set(as[k].value, source::guess);
        break;
      }
  // A subtotal equal to the total is the same figure printed twice, not a net amount.
  if (subtotal_.found() && total_.found() && near(*subtotal_.value, *total_.value))
    subtotal_ = {};

  // The merchant: the first line at the top that is a name (letters, no digits, no label), and
  // the line below it when the till wrapped a long name.
  for (size_t i = 0; i < raw_.size() && i < 6; ++i) {
    auto t = trim(raw_[i]);
    if (t.empty())
      continue;
    bool digits = std::any_of(t.begin(), t.end(), is_digit);
    size_t letters = letters_in(t);
    // A till word in a name ("Bar Giolitti") is no label when no amount follows it.
    bool labelled = std::any_of(hits_[i].begin(), hits_[i].end(), [](const hit& h) {
      return h.k != kind::tender && h.k != kind::change && h.k != kind::rounding;
    });
    bool name_like
        = !digits && !labelled && letters >= 4
          && letters * 10
                 >= (t.size() - static_cast<size_t>(std::count(t.begin(), t.end(), ' '))) * 7;
    if (!name_like)
      continue;
    std::string name{t};
    if (i + 1 < raw_.size() && name.size() >= 18) {
      auto next = trim(raw_[i + 1]);
      bool next_digits = std::any_of(next.begin(), next.end(), is_digit);
      if (!next.empty() && !next_digits && hits_[i + 1].empty() && letters_in(next) >= 3)
        name += " " + std::string{next};
    }
    supplier_name_.set(without_leading_specks(clean_value(name)), source::guess);
    break;
  }
}

} // namespace ingestd::local_rules
