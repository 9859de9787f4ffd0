// Labels of all languages merged into one list, longest first, and the per-line label finder.
#include "adapters/llm/local/labels.hpp"

#include <algorithm>

#include "adapters/llm/local/text.hpp"

namespace ingestd::local_rules {

const std::vector<const label_table*>& label_tables() {
  static const std::vector<const label_table*> all{&labels_en(), &labels_de(), &labels_fr(), &labels_nl(),
                                                   &labels_es(), &labels_it(), &labels_pl()};
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
std::vector<hit> find_labels(std::string_view low) {
  std::vector<hit> out;
  for (size_t i = 0; i < low.size();) {
    bool matched = false;
    if (i == 0 || !is_word(low[i - 1])) {
      for (const auto& l : labels()) {
        size_t end = match_folded(low, i, l.text);
        if (end == std::string_view::npos)
          continue;
        char last = l.text.back();
        bool after_ok = end >= low.size() || !is_letter(low[end]) || !is_letter(last);
        if (!after_ok)
          continue;
        out.push_back(hit{l.k, i, end, l.language});
        i = end;
        matched = true;
        break;
      }
    }
    if (!matched)
      ++i;
  }
  return out;
}

} // namespace ingestd::local_rules
