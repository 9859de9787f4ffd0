// Which language a page's text is in, from its common words: enough to choose the Tesseract
// language data for a second reading of a page that the configured languages read poorly.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ingestd {

/// The Tesseract languages of a "+"-separated list ("fra+nld" -> {"fra", "nld"}).
std::vector<std::string> split_languages(std::string_view list);

/// The language among `candidates` (Tesseract codes: eng deu fra nld spa ita pol) whose common
/// words the text holds most, when it holds at least `min_words` of them and clearly more than of
/// any other candidate; empty otherwise. Codes the guesser has no words for are never chosen.
std::string guess_language(std::string_view text, const std::vector<std::string>& candidates,
                           int min_words = 3);

} // namespace ingestd
