// Keyed fields: the invoice number, the invoice and due dates, payment terms, and the subtotal,
// VAT and total, each read from the value after (or below) its label.
#include <algorithm>
#include <map>
#include <regex>

#include "adapters/extraction/local/document.hpp"

namespace ingestd::local_rules {

void run_state::find_keyed_fields() {
  struct amount_candidate {
    double value;
    int rank;
    size_t line;
  };
  std::vector<amount_candidate> totals;
  std::vector<amount_candidate> subtotals;
  // (rate in basis points, -1 when none; the Indian GST part) -> amount.
  std::map<std::pair<long, std::string>, double> vat_by_rate;
  // "Order ID", "Booking number": the document's number when no invoice-number label is there.
  std::optional<std::string> order_number;

  for (size_t i = 0; i < raw_.size(); ++i) {
    const auto& hs = hits_[i];
    for (size_t h = 0; h < hs.size(); ++h) {
      kind k = hs[h].k;
      auto [b, e] = segment(i, h);
      std::string_view seg_raw = std::string_view{raw_[i]}.substr(b, e - b);
      switch (k) {
      case kind::invoice_number:
      case kind::invoice_title:
      case kind::order_number: {
        if (invoice_number_.src == source::label)
          break;
        if (k == kind::order_number && order_number.has_value())
          break;
        // The value: the first token with a digit, right after the label.
        auto value_of = [this](std::string_view s) -> std::optional<std::string> {
          auto v = clean_value(s);
          size_t start = 0;
          while (start < v.size()
                 && (v[start] == '#' || v[start] == ':' || v[start] == '.' || v[start] == ' '
                     || v[start] == '-'))
            ++start;
          v = v.substr(start);
          auto sp = v.find(' ');
          std::string tok = v.substr(0, sp);
          // "FS 01/2024", "FPR 29/08": a short series prefix set apart from the number.
          if (sp != std::string::npos && tok.size() <= 4 && !tok.empty()
              && std::all_of(tok.begin(), tok.end(), [](char c) { return c >= 'A' && c <= 'Z'; })
              && sp + 1 < v.size() && is_digit(v[sp + 1])) {
            auto sp2 = v.find(' ', sp + 1);
            tok = v.substr(0, sp2);
          }
          while (!tok.empty() && (tok.back() == ',' || tok.back() == ';' || tok.back() == ')'))
            tok.pop_back();
          if (tok.empty() || tok.size() > 40)
            return std::nullopt;
          if (std::none_of(tok.begin(), tok.end(), is_digit))
            return std::nullopt;
          if (!find_dates(lower(tok), day_first_).empty())
            return std::nullopt;
          return tok;
        };
        auto v = value_of(seg_raw);
        if (!v && k != kind::invoice_title && (line_has_only_label(i, h) || header_row(i)))
          if (auto c = below(i, hs[h].begin))
            v = value_of(c->second);
        if (!v && k != kind::invoice_title)
          if (auto st = stacked_.find({i, hs[h].begin}); st != stacked_.end())
            v = value_of(st->second);
        if (!v)
          break;
        // "INVOICE TVC/2024/031" at the start of a line is as good as a label.
        bool title_first = k == kind::invoice_title && hs[h].begin == 0
                           && (h + 1 >= hs.size() || hs[h + 1].begin > hs[h].end + v->size());
        if (k == kind::order_number)
          order_number = *v;
        else if (k == kind::invoice_number || title_first)
          invoice_number_.set(*v, source::label);
        else if (!invoice_number_.found())
          invoice_number_.set(*v, source::guess);
        break;
      }
      case kind::invoice_date:
      case kind::due_date:
      case kind::other_date: {
        auto& target = k == kind::invoice_date ? invoice_date_ : due_date_;
        std::optional<std::string> v;
        for (const auto& d : dates_[i])
          if (d.begin >= b && d.begin < e) {
            v = d.iso;
            break;
          }
        if (!v && !trim(seg_raw).empty() && trim(seg_raw).back() == '/' && h + 1 < hs.size()) {
          // "Fecha de la factura/Fecha de entrega: 05 marzo 2024": one date for both labels.
          auto next_end = segment(i, h + 1).second;
          for (const auto& d : dates_[i])
            if (d.begin >= e && d.begin < next_end) {
              v = d.iso;
              break;
            }
        }
        if (!v && (line_has_only_label(i, h) || header_row(i)))
          if (auto c = below(i, hs[h].begin))
            if (auto d = find_dates(lower(c->second), day_first_); !d.empty())
              v = d.front().iso;
        if (!v)
          if (auto st = stacked_.find({i, hs[h].begin}); st != stacked_.end())
            if (auto d = find_dates(lower(st->second), day_first_); !d.empty())
              v = d.front().iso;
        if (k == kind::due_date && !v) {
          // "Due: within 30 days" / "fällig innerhalb von 14 Tagen"
          static const std::regex days{R"((\d{1,3}) ?(days|tage|tagen))"};
          std::smatch m;
          std::string seg_low = low_[i].substr(b, e - b);
          if (std::regex_search(seg_low, m, days))
            terms_days_ = std::stoi(m[1].str());
        }
        if (v && k != kind::other_date && target.src != source::label)
          target.set(*v, source::label);
        break;
      }
      case kind::terms: {
        static const std::regex days{R"((\d{1,3}) ?(days|tage|tagen)|net ?(\d{1,3}))"};
        std::smatch m;
        std::string seg_low = low_[i].substr(b);
        if (header_row(i))
          if (auto c = below(i, hs[h].begin))
            seg_low = lower(c->second);
        if (std::regex_search(seg_low, m, days))
          terms_days_ = std::stoi(m[1].matched ? m[1].str() : m[3].str());
        break;
      }
      case kind::subtotal:
      case kind::vat:
      case kind::total:
      case kind::total_weak: {
        kind eff = k;
        // "Total excl. VAT" / "Summe netto": a net figure.
        if ((k == kind::total || k == kind::total_weak) && h + 1 < hs.size()
            && hs[h + 1].k == kind::net_qualifier && hs[h + 1].begin - hs[h].end <= 3)
          eff = kind::subtotal;
        if (k == kind::vat && h > 0 && hs[h - 1].k == kind::net_qualifier)
          break; // "excl. VAT" alone is not a VAT line
        std::string_view seg = std::string_view{masked_[i]}.substr(b, e - b);
        auto amounts = find_amounts(seg);
        std::optional<double> value;
        std::optional<double> rate;
        for (const auto& a : amounts) {
          if (a.percent)
            rate = a.value;
          else
            value = a.value; // the last amount on the segment
        }
        if (!value && line_has_only_label(i, h)) {
          // The amount below the label (column layouts) or alone on the next line.
          if (auto c = below(i, hs[h].begin, 1)) {
            auto as = find_amounts(c->second);
            if (as.size() == 1 && !as[0].percent && find_labels(lower(c->second)).empty())
              value = as[0].value;
          }
        }
        if (!value)
          if (auto st = stacked_.find({i, hs[h].begin}); st != stacked_.end())
            if (auto as = find_amounts(st->second); as.size() == 1)
              value = as[0].value;
        if (!value)
          break;
        if (eff == kind::subtotal) {
          subtotals.push_back({*value, 0, i});
        } else if (eff == kind::vat) {
          long key = rate ? std::lround(*rate * 100) : -1;
          // The same tax printed twice (a summary and the totals) counts once; India's central
          // and state GST at the same rate are two taxes.
          auto name
              = std::string{std::string_view{low_[i]}.substr(hs[h].begin, hs[h].end - hs[h].begin)};
          if (name != "cgst" && name != "sgst" && name != "utgst")
            name.clear();
          vat_by_rate[{key, name}] = *value;
        } else {
          totals.push_back({*value, eff == kind::total ? 2 : 1, i});
        }
        break;
      }
      default:
        break;
      }
    }
  }

  // An order or booking number beats a guess but not an invoice-number label.
  if (order_number && invoice_number_.src != source::label)
    invoice_number_.set(*order_number, source::label);
  if (!subtotals.empty())
    subtotal_.set(subtotals.front().value, source::label);
  if (!vat_by_rate.empty()) {
    double sum = 0;
    // A rate-less line next to per-rate lines is their sum.
    bool has_rates = std::any_of(vat_by_rate.begin(), vat_by_rate.end(),
                                 [](const auto& e) { return e.first.first >= 0; });
    for (const auto& [key, v] : vat_by_rate)
      if (!(has_rates && key.first < 0))
        sum += v;
    vat_.set(round2(sum), source::label);
  }
  if (!totals.empty()) {
    int best_rank = 0;
    for (const auto& t : totals)
      best_rank = std::max(best_rank, t.rank);
    double best = 0;
    bool has_best = false;
    for (const auto& t : totals)
      if (t.rank == best_rank && (!has_best || t.value > best)) {
        best = t.value;
        has_best = true;
      }
    // A weak "Total" equal to the subtotal is the net sum of a table, not the gross total.
    if (best_rank == 1 && subtotal_.found() && vat_.found() && near(best, *subtotal_.value)
        && vat_.value.value() > 0) {
      double max_weak = best;
      has_best = false;
      for (const auto& t : totals)
        if (!near(t.value, max_weak) && (!has_best || t.value > best)) {
          best = t.value;
          has_best = true;
        }
    }
    // Reconciliation before label strength and position: the labelled total that the subtotal
    // and the tax add up to (not a subtotal or a line's total labelled "Total" beside it).
    if (subtotal_.found() && vat_.found()) {
      double expected = round2(*subtotal_.value + *vat_.value);
      for (const auto& t : totals)
        if (near(t.value, expected, 0.02)) {
          best = t.value;
          has_best = true;
          break;
        }
    }
    if (has_best)
      total_.set(best, source::label);
  }
  if (!due_date_.found() && terms_days_ && invoice_date_.found()) {
    const auto& d = *invoice_date_.value;
    int y = std::stoi(d.substr(0, 4)), m = std::stoi(d.substr(5, 2)),
        dd = std::stoi(d.substr(8, 2));
    due_date_.set(civil_from_days(days_from_civil(y, m, dd) + *terms_days_), source::derived);
  }
  if (!invoice_date_.found()) {
    // The first date in the upper part of the document that no label claims for something else.
    for (size_t i = 0; i < raw_.size() && i < 40 && !invoice_date_.found(); ++i) {
      bool other = std::any_of(hits_[i].begin(), hits_[i].end(), [](const hit& x) {
        return x.k == kind::due_date || x.k == kind::other_date;
      });
      if (!other && !dates_[i].empty())
        invoice_date_.set(dates_[i].front().iso, source::guess);
    }
  }
}

} // namespace ingestd::local_rules
