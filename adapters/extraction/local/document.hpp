// The shared representation of one document for the rules: its lines (raw, lower case, with
// dates blanked out), the dates and labels found on each line, and the fields found so far.
// Each rule family is a member defined in its own file (keyed_fields.cpp, parties.cpp, ...).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/extraction/local/amounts.hpp"
#include "adapters/extraction/local/dates.hpp"
#include "adapters/extraction/local/labels.hpp"
#include "adapters/extraction/local/text.hpp"
#include "adapters/extraction/local_extractor.hpp"

namespace ingestd::local_rules {

enum class source { none, label, guess, derived };

template <class T>
struct field {
  std::optional<T> value;
  source src = source::none;
  void set(T v, source s) {
    value = std::move(v);
    src = s;
  }
  bool found() const { return value.has_value(); }
};

struct item {
  std::string description;
  std::optional<double> quantity;
  std::optional<double> unit_price;
  std::optional<double> amount;
};

inline bool near(double a, double b, double tol = 0.015) {
  return std::fabs(a - b) <= tol;
}

inline double round2(double v) {
  return std::round(v * 100.0) / 100.0;
}

class run_state {
public:
  run_state(std::string_view text, const local_extractor_options& opts);

  /// Runs every rule family in order and builds the extraction.
  extraction finish();

private:
  void decide_conventions();
  void find_stacked_values();
  void find_heading_rows();
  void find_keyed_fields();
  void find_parties();
  void find_vat_id();
  void find_currency();
  void find_line_items();
  /// Till receipts (receipts.cpp): whether the text is one, and its total and merchant.
  bool looks_like_receipt() const;
  void read_receipt();
  /// A till receipt (read_receipt ran), and how many of its own checks its total passed: 2 for
  /// a total label (3 after a cash rounding), 3 for the tendered cash less the change, 2 for a
  /// card payment of the amount, 2 for the items (and the tax) adding up to it.
  bool receipt_ = false;
  int receipt_total_support_ = 0;
  /// The last amount with decimals on line `i` (dates blanked out), if any.
  std::optional<double> amount_at_end(size_t i) const;
  void reconcile();
  /// The net, tax and total from three amounts in a row that add up (reconcile.cpp), when the
  /// labelled figures do not.
  void find_printed_sum();
  std::string to_json(bool successful, const std::string& confidence,
                      const std::vector<std::string>& missing) const;

  /// The value segment of hit `h` on line `i`: up to the next label that is not a qualifier.
  std::pair<size_t, size_t> segment(size_t i, size_t h) const {
    const auto& hs = hits_[i];
    size_t begin = hs[h].end;
    size_t end = raw_[i].size();
    for (size_t k = h + 1; k < hs.size(); ++k) {
      if (hs[k].k == kind::qualifier || hs[k].k == kind::net_qualifier)
        continue;
      end = hs[k].begin;
      break;
    }
    return {begin, end};
  }

  /// The cell below the label on a later line (column layouts), or the next non-empty line's
  /// text when the label stands alone.
  std::optional<std::pair<size_t, std::string>> below(size_t i, size_t column,
                                                      size_t max_down = 2) const {
    for (size_t j = i + 1; j < raw_.size() && j <= i + max_down; ++j) {
      if (trim(raw_[j]).empty())
        continue;
      auto cs = cells_of(raw_[j]);
      const cell* best = nullptr;
      size_t best_dist = SIZE_MAX;
      for (const auto& c : cs) {
        size_t dist = c.begin > column ? c.begin - column : column - c.begin;
        if (dist < best_dist) {
          best = &c;
          best_dist = dist;
        }
      }
      if (best && best_dist <= 12)
        return std::make_pair(j, best->text);
      return std::nullopt;
    }
    return std::nullopt;
  }

  std::string prefix_before_label(size_t i) const;
  bool starts_with_label(size_t i) const;

  /// A row of column headings ("Invoice Date   Invoice #   Terms"): values are in the row below.
  bool header_row(size_t i) const {
    size_t labels = 0;
    for (const auto& h : hits_[i])
      labels += h.k != kind::qualifier && h.k != kind::net_qualifier ? 1 : 0;
    return labels >= 2 && dates_[i].empty() && find_amounts(masked_[i]).empty()
           && cells_of(raw_[i]).size() >= 2;
  }

  bool line_has_only_label(size_t i, size_t h) const {
    auto [b, e] = segment(i, h);
    auto rest = trim(std::string_view{raw_[i]}.substr(b, e - b));
    return rest.empty() || rest == ":" || rest == "#";
  }

  const local_extractor_options& opts_;
  std::vector<std::string> raw_;
  std::vector<std::string> low_;
  std::vector<std::string> masked_;
  std::vector<std::vector<date_hit>> dates_;
  std::vector<std::vector<hit>> hits_;
  bool day_first_ = false;
  bool german_ = false;

  field<std::string> invoice_number_, invoice_date_, due_date_, supplier_name_, supplier_address_,
      supplier_vat_id_, customer_name_, currency_;
  field<double> subtotal_, vat_, total_;
  std::vector<item> items_;
  std::optional<int> terms_days_;
  bool items_reconcile_ = false;
  bool totals_reconcile_ = false;
  bool totals_contradict_ = false;
  /// Values for labels that OCR put apart from their values: a column of labels, or a row of
  /// column headings above a row of values ((line, offset of the label) -> the value's text):
  /// see stacked.cpp.
  std::map<std::pair<size_t, size_t>, std::string> stacked_;
};

} // namespace ingestd::local_rules
