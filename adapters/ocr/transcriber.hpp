// The transcription port (seed 000 step 6): text and quality for one document. Implemented by
// the local provider (poppler, Tesseract, OpenCV on the CPU pool) and document_ai.
#pragma once

#include <string>

#include "messages/result.hpp"
#include "messages/transcription.hpp"

namespace ingestd {

struct transcription_request {
  std::string bytes;
  /// "application/pdf", "image/png", "image/jpeg", "image/tiff".
  std::string mime_type;
  /// Quality below which the provider preprocesses and tries again (seed 000).
  double quality_threshold = 0.7;
  /// false when the document was already preprocessed.
  bool allow_preprocessing = true;
};

/// Asynchronous: returns at once, calls `done` exactly once from another thread. Corrupt,
/// unsupported or over-limit input is a permanent error naming the problem.
class transcriber {
public:
  virtual ~transcriber() = default;
  virtual void transcribe(transcription_request request, callback<transcription> done) = 0;
  virtual std::string name() const = 0;
};

} // namespace ingestd
