// Labels of all languages merged into one list, longest first, and the per-line label finder.
#include "adapters/extraction/local/labels.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "adapters/extraction/local/text.hpp"

namespace ingestd::local_rules {

const std::vector<const label_table*>& label_tables() {
  static const std::vector<const label_table*> all{&labels_en(), &labels_de(), &labels_fr(),
                                                   &labels_nl(), &labels_es(), &labels_it(),
                                                   &labels_pl()};
  return all;
}

const std::vector<label>& labels() {
  static const std::vector<label> all = [] {
    std::vector<label> v;
    for (const auto* table : label_tables())
      for (auto l : *table->labels) {
        l.language = table->language;
        v.push_back(l);
      }
    std::stable_sort(v.begin(), v.end(),
                     [](const label& a, const label& b) { return a.text.size() > b.text.size(); });
    return v;
  }();
  return all;
}

/// Label hits in a lowered line, longest label first at each position, on word boundaries.
namespace {

/// The labels that can match at a byte: those starting with it, and those starting with an
/// accented letter whose base letter it is (and the other way round, see find_labels). Each
/// bucket keeps the longest-first order.
const std::array<std::vector<const label*>, 256>& labels_by_first_byte() {
  static const auto index = [] {
    std::array<std::vector<const label*>, 256> by;
    for (const auto& l : labels()) {
      by[static_cast<unsigned char>(l.text[0])].push_back(&l);
      if (l.text.size() >= 2)
        if (char b = ascii_base(l.text[0], l.text[1]); b != 0)
          by[static_cast<unsigned char>(b)].push_back(&l);
    }
    return by;
  }();
  return index;
}

/// The longest label of `bucket` at `i` on word boundaries ending at or before `limit`:
/// (label, end) or null.
std::pair<const label*, size_t> first_match(const std::vector<const label*>& bucket,
                                            std::string_view low, size_t i,
                                            size_t limit = std::string_view::npos) {
  for (const auto* l : bucket) {
    size_t end = match_folded(low, i, l->text);
    if (end == std::string_view::npos || end > limit)
      continue;
    char last = l->text.back();
    if (end >= low.size() || !is_letter(low[end]) || !is_letter(last))
      return {l, end};
  }
  return {nullptr, 0};
}

/// The longest label at `i` (either bucket: the byte's own and its accent-free base letter's).
std::pair<const label*, size_t> longest_at(std::string_view low, size_t i,
                                           size_t limit = std::string_view::npos) {
  const auto& index = labels_by_first_byte();
  auto best = first_match(index[static_cast<unsigned char>(low[i])], low, i, limit);
  // An accented letter in the text also matches labels spelled with its base letter.
  if (i + 1 < low.size())
    if (char b = ascii_base(low[i], low[i + 1]); b != 0) {
      auto other = first_match(index[static_cast<unsigned char>(b)], low, i, limit);
      if (other.first && (!best.first || other.first->text.size() > best.first->text.size()))
        best = other;
    }
  return best;
}

} // namespace

std::vector<hit> find_labels(std::string_view low) {
  std::vector<hit> out;
  for (size_t i = 0; i < low.size();) {
    if (i > 0 && is_word(low[i - 1])) {
      ++i;
      continue;
    }
    auto best = longest_at(low, i);
    if (!best.first) {
      ++i;
      continue;
    }
    // Overlapping labels: the longer wins, on a tie the later one ("Date Due Date" is "Date" +
    // "Due Date", not "Date due" + "Date"), when a shorter label ends before it.
    for (size_t w = i + 1; w < best.second; ++w) {
      if (is_word(low[w - 1]) || !is_letter(low[w]))
        continue;
      auto inner = longest_at(low, w);
      if (!inner.first || inner.second <= best.second || inner.second - w < best.second - i)
        continue;
      if (auto shorter = longest_at(low, i, w); shorter.first) {
        best = shorter;
        break;
      }
    }
    out.push_back(hit{best.first->k, i, best.second, best.first->language});
    i = best.second;
  }
  return out;
}

} // namespace ingestd::local_rules
