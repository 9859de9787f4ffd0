// fallback_extractor: the primary's answer, or the fallback's for a context-window failure.
#include "adapters/extraction/fallback_extractor.hpp"

#include "messages/error_codes.hpp"

#include <utility>

namespace ingestd {

fallback_extractor::fallback_extractor(std::shared_ptr<extractor> primary,
                                       std::shared_ptr<extractor> fallback)
    : primary_(std::move(primary)), fallback_(std::move(fallback)) {}

void fallback_extractor::extract(std::string text, callback<extraction> done) {
  extract_with(std::move(text), {}, std::move(done));
}

void fallback_extractor::extract_with(std::string text, call_context context,
                                      callback<extraction> done) {
  auto kept = std::make_shared<std::string>(text);
  primary_->extract_with(
      std::move(text), std::move(context),
      [this, kept, done = std::move(done)](result<extraction> r) mutable {
        if (r || r.error().code != errc::llm_context_exceeded)
          return done(std::move(r));
        auto why = r.error().describe();
        fallback_->extract(std::move(*kept), [why, done,
                                              name = fallback_->name()](result<extraction> local) {
          if (local)
            local->review_reason = "extracted by the " + name
                                   + " extractor: the text is too long for the LLM (" + why + ")";
          done(std::move(local));
        });
      });
}

} // namespace ingestd
