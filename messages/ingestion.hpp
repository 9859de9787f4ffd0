// What the ingest stage writes about one ingestion besides its work item: the transcription it
// stored and the result it completed with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ingestd {

/// The stored transcription, recorded on the ingestion with the result (or alone, before a
/// failed attempt is recorded).
struct transcription_record {
  std::string transcription_file_path;
  /// Empty when no preprocessing was applied.
  std::string preprocessed_file_path;
  double quality_score = 0;
  /// The pages the provider read and the provider ("tesseract", "document_ai", ...), for the
  /// usage figures.
  int32_t pages = 0;
  std::string provider;
};

/// The successful outcome; the trigger copies it to the document.
struct completion_record {
  /// The extracted invoice as a JSON object.
  std::string structured_data;
  bool valid_structured_data = true;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::string model;
  /// Why a person must look at it (e.g. "text_unavailable: ..."): the document goes to review
  /// (the work item's remark says why). Empty: nothing to add.
  std::string review_reason;
  /// The transcription this attempt stored, recorded with the result; none when an earlier
  /// attempt recorded it.
  std::optional<transcription_record> transcription;
};

} // namespace ingestd
