// Stacked columns: OCR of a two-column block reads all the labels first ("Invoice no:", "Date",
// "Due Date") and their values later as a column of their own ("INV-1", "31 March 2025", ...).
// A run of label-only lines is paired with the next run of value lines that fits it, line by
// line; for amounts with the last lines of the amount column (totals sit at its bottom), and
// only when the figures reconcile.
#include <algorithm>

#include "adapters/extraction/local/document.hpp"

namespace ingestd::local_rules {

namespace {

bool is_amount_kind(kind k) {
  return k == kind::subtotal || k == kind::vat || k == kind::total || k == kind::total_weak;
}

constexpr size_t max_scan_lines = 40;

} // namespace

void run_state::find_stacked_values() {
  // A label-only line: one label at its start and nothing after it but a colon, '#' or a rate.
  auto label_only = [this](size_t i) -> std::optional<kind> {
    const auto& hs = hits_[i];
    std::vector<const hit*> real;
    for (const auto& h : hs)
      if (h.k != kind::qualifier && h.k != kind::net_qualifier)
        real.push_back(&h);
    if (real.size() != 1 || !starts_with_label(i) || !dates_[i].empty())
      return std::nullopt;
    kind k = real.front()->k;
    if (k == kind::customer || k == kind::supplier || k == kind::contact || k == kind::invoice_title
        || k == kind::terms)
      return std::nullopt;
    auto rest = std::string_view{masked_[i]}.substr(real.front()->end);
    for (const auto& a : find_amounts(rest))
      if (!a.percent)
        return std::nullopt;
    if (!is_amount_kind(k)) {
      auto r = trim(rest);
      if (!(r.empty() || r == ":" || r == "#"))
        return std::nullopt;
    }
    return k;
  };
  auto is_amount_line = [this](size_t i) {
    if (!hits_[i].empty() || !dates_[i].empty())
      return false;
    auto as = find_amounts(masked_[i]);
    if (as.size() != 1 || as[0].percent || !as[0].decimals)
      return false;
    // Nothing else on the line but a currency marker.
    auto rest = std::string{masked_[i].substr(0, as[0].begin)} + masked_[i].substr(as[0].end);
    size_t letters = static_cast<size_t>(std::count_if(rest.begin(), rest.end(), is_letter));
    return letters <= 3;
  };
  auto is_value_line = [this](size_t i) {
    auto t = trim(raw_[i]);
    return hits_[i].empty() && !t.empty() && t.size() <= 40
           && std::any_of(t.begin(), t.end(), is_digit);
  };
  auto fits = [this](kind k, const std::string& value) {
    switch (k) {
    case kind::invoice_date:
    case kind::due_date:
    case kind::other_date:
      return !find_dates(lower(value), day_first_).empty();
    case kind::invoice_number:
    case kind::order_number:
    case kind::other_number:
      return find_dates(lower(value), day_first_).empty()
             && std::any_of(value.begin(), value.end(), is_digit);
    default:
      return true;
    }
  };

  for (size_t i = 0; i < raw_.size(); ++i) {
    // The run of label-only lines (blank lines between allowed).
    struct entry {
      size_t first; // line
      kind second;  // the label's kind
      size_t third; // the label's offset
    };
    std::vector<entry> run;
    size_t j = i;
    for (; j < raw_.size(); ++j) {
      if (trim(raw_[j]).empty())
        continue;
      auto k = label_only(j);
      if (!k)
        break;
      // A weak total after a strong one is the amount column's heading ("Montant", "Importo").
      if (*k == kind::total_weak && !run.empty()
          && (run.back().second == kind::total || run.back().second == kind::total_weak))
        break;
      run.push_back({j, *k, raw_[j].find_first_not_of(' ')});
    }
    if (run.size() < 2) {
      i = std::max(i, j);
      continue;
    }
    bool amounts = std::all_of(run.begin(), run.end(),
                               [](const auto& r) { return is_amount_kind(r.second); });
    bool mixed = !amounts && std::any_of(run.begin(), run.end(), [](const auto& r) {
      return is_amount_kind(r.second);
    });
    if (mixed) {
      i = j;
      continue;
    }
    // Runs of value lines below, the first that fits.
    size_t end = std::min(raw_.size(), j + max_scan_lines);
    for (size_t p = j; p < end;) {
      std::vector<size_t> values;
      size_t q = p;
      for (; q < end; ++q) {
        if (trim(raw_[q]).empty())
          continue;
        if (amounts ? !is_amount_line(q) : !is_value_line(q))
          break;
        values.push_back(q);
      }
      if (values.size() >= run.size()) {
        size_t offset = amounts ? values.size() - run.size() : 0;
        bool ok = true;
        for (size_t r = 0; r < run.size() && ok; ++r)
          ok = fits(run[r].second, raw_[values[offset + r]]);
        if (ok && amounts && run.size() == 3 && run[0].second == kind::subtotal
            && run[1].second == kind::vat) {
          auto v = [this, &values, offset](size_t r) {
            return find_amounts(masked_[values[offset + r]]).front().value;
          };
          ok = near(v(0) + v(1), v(2), 0.02);
        }
        if (ok) {
          for (size_t r = 0; r < run.size(); ++r)
            stacked_[{run[r].first, run[r].third}] = raw_[values[offset + r]];
          break;
        }
      }
      p = std::max(q, p + 1);
    }
    i = j;
  }
  find_heading_rows();
}

void run_state::find_heading_rows() {
  // "Invoice Number Invoice Date Due Date" over "2025/980 12/09/2025 26/09/2025": a line of
  // labels only, then a line of as many values (a date with spaces counts as one), in order.
  for (size_t i = 0; i + 1 < raw_.size(); ++i) {
    std::vector<const hit*> real;
    for (const auto& h : hits_[i])
      if (h.k != kind::qualifier && h.k != kind::net_qualifier)
        real.push_back(&h);
    if (real.size() < 2 || !dates_[i].empty())
      continue;
    // Nothing but the labels (and separators) on the line.
    size_t covered = 0;
    for (const auto* h : real)
      covered += h->end - h->begin;
    size_t printed = static_cast<size_t>(std::count_if(raw_[i].begin(), raw_[i].end(), [](char c) {
      return c != ' ' && c != ':' && c != '|' && c != '#';
    }));
    size_t label_chars = 0;
    for (const auto* h : real)
      for (size_t p = h->begin; p < h->end; ++p)
        label_chars += raw_[i][p] != ' ' ? 1 : 0;
    if (label_chars < printed || covered == 0)
      continue;
    size_t j = i + 1;
    while (j < raw_.size() && trim(raw_[j]).empty() && j < i + 3)
      ++j;
    if (j >= raw_.size() || !hits_[j].empty())
      continue;
    // The value units of line j: dates whole, other runs split at spaces.
    std::vector<std::string> units;
    const auto& line = raw_[j];
    size_t p = 0;
    while (p < line.size()) {
      if (line[p] == ' ') {
        ++p;
        continue;
      }
      auto d = std::find_if(dates_[j].begin(), dates_[j].end(),
                            [p](const date_hit& x) { return x.begin == p; });
      size_t end = d != dates_[j].end() ? d->end : line.find(' ', p);
      if (end == std::string::npos)
        end = line.size();
      units.push_back(line.substr(p, end - p));
      p = end;
    }
    if (units.size() != real.size())
      continue;
    for (size_t u = 0; u < units.size(); ++u)
      stacked_.try_emplace({i, real[u]->begin}, units[u]);
  }
}

} // namespace ingestd::local_rules
