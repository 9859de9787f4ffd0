// Per-field accuracy of an extractor over (text, ground truth) pairs: reusable for the native-text
// path (the corpus's truth text) and for OCR'd scans (text from the transcriber, same truth).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ingestd::test {

/// One document: the text to extract from and its ground truth (a JSON object with the schema's
/// field names; extra keys are ignored).
struct truth_pair {
  std::string name;
  std::string text;
  std::string truth_json;
};

/// Loads pairs from `dir`: either `<name>.txt` + `<name>.json` files, or JSON files that carry
/// their own "text" (the corpus's truth/invNN.json).
std::vector<truth_pair> load_truth_pairs(const std::string& dir);

struct field_score {
  std::string field;
  int correct = 0;
  int total = 0;
  double ratio() const { return total == 0 ? 0 : static_cast<double>(correct) / total; }
};

struct accuracy_report {
  /// In schema order, plus "line_items" (count, amounts, quantities, prices and descriptions).
  std::vector<field_score> fields;
  int documents = 0;
  /// "name.field: got X, want Y" for each miss.
  std::vector<std::string> misses;
  /// A Markdown table of the scores.
  std::string table() const;
  const field_score& operator[](const std::string& field) const;
};

/// Runs `extract_json` (text -> structured_data JSON) on every pair and compares per field:
/// strings after case folding and dropping everything but letters and digits, numbers within
/// 0.005, dates exactly; a field absent from the truth counts when the extractor also says null.
accuracy_report
measure_accuracy(const std::vector<truth_pair>& pairs,
                 const std::function<std::string(const std::string&)>& extract_json);

} // namespace ingestd::test
