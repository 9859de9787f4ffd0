// Task-specific recovery for extraction: a text too long for the LLM's context window is extracted
// by the local rules instead, and the document goes to review with the reason.
#pragma once

#include <memory>

#include "adapters/extraction/extractor.hpp"

namespace ingestd {

class fallback_extractor final : public extractor {
public:
  /// `primary` answers first; `fallback` (inline rules) takes over on "llm.context_exceeded".
  fallback_extractor(std::shared_ptr<extractor> primary, std::shared_ptr<extractor> fallback);

  void extract(std::string text, callback<extraction> done) override;
  void extract_with(std::string text, call_context context, callback<extraction> done) override;
  std::string name() const override { return primary_->name(); }
  bool deterministic() const override { return primary_->deterministic(); }

private:
  std::shared_ptr<extractor> primary_;
  std::shared_ptr<extractor> fallback_;
};

} // namespace ingestd
