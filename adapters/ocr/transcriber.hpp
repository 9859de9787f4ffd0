// The transcription port: text and quality for one document. Implemented by
// the local provider (poppler, Tesseract, OpenCV on the CPU pool) and document_ai.
#pragma once

#include <chrono>

#include <functional>
#include <string>

#include "messages/call_context.hpp"
#include "messages/error_codes.hpp"
#include "messages/result.hpp"
#include "messages/transcription.hpp"

namespace ingestd {

struct transcription_request {
  std::string bytes;
  /// "application/pdf", "image/png", "image/jpeg", "image/tiff".
  std::string mime_type;
  /// Quality below which the provider preprocesses and tries again.
  double quality_threshold = 0.7;
  /// false when the document was already preprocessed.
  bool allow_preprocessing = true;
  /// A provider that waits_for_cpu() calls this (from a CPU worker) when a worker starts on the
  /// document, before `done`: the caller's deadline for the work starts then, not while the
  /// document waits for a free worker.
  std::function<void()> started;
  /// The document's deadline for this request (the size class's OCR deadline); 0: the
  /// provider's own (transcription.timeout_seconds).
  std::chrono::seconds timeout{0};
  /// The caller's: a remote provider tells its hooks when its request waits for the provider's
  /// limits (Document AI behind rate_limited_client) and when it goes on, so that the caller's
  /// deadline stops meanwhile.
  call_context context;
};

/// Asynchronous: returns at once, calls `done` exactly once from another thread. Corrupt,
/// unsupported or over-limit input is a permanent error naming the problem; a document that
/// waited for a CPU worker past its deadline is never_started().
class transcriber {
public:
  virtual ~transcriber() = default;
  virtual void transcribe(transcription_request request, callback<transcription> done) = 0;
  virtual std::string name() const = 0;
  /// true: the work waits for a CPU worker first, and the request's `started` is called.
  virtual bool waits_for_cpu() const { return false; }
};

} // namespace ingestd
