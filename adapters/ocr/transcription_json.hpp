// JSON form of a transcription: what is stored at ingestions/{id}/transcription-output.json and
// read back on crash resume.
#pragma once

#include <string>
#include <string_view>

#include "messages/result.hpp"
#include "messages/transcription.hpp"

namespace ingestd {

/// Current schema version written in the "version" member.
inline constexpr int transcription_json_version = 1;

/// Everything but the preprocessed image bytes (stored on their own at
/// ingestions/{id}/preprocessed.{ext}); preprocessed_ext is kept so a reader can find them.
std::string to_json(const transcription& x);

/// The same object without what only a reader of the stored form needs (version,
/// preprocessed_ext, text, pages): provider, page_count, quality_score, native_text,
/// preprocessed, duration_ms and warnings, in that order, for reports such as `ingestd extract
/// --json`.
std::string to_summary_json(const transcription& x);

/// A page's words as the stored form writes them: [[text, left, top, right, bottom], ...], the
/// box in fractions of the page to four decimals (the review desk's page data uses it too).
std::string to_json(const std::vector<page_word>& words);

/// The error code of a stored transcription that cannot be read.
inline constexpr std::string_view bad_transcription_json = "ocr.bad_transcription_json";

/// Parses what to_json wrote. Anything else (not JSON, wrong types, missing members, a score
/// outside [0, 1], page_count not matching pages) is the permanent error
/// bad_transcription_json naming the first problem.
result<transcription> transcription_from_json(std::string_view json);

} // namespace ingestd
