// The local transcription provider: poppler for PDF text layers, Tesseract for images and
// scanned pages, OpenCV for quality and preprocessing; all CPU work on an injected executor.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "adapters/ocr/ocr_options.hpp"
#include "adapters/ocr/transcriber.hpp"
#include "adapters/support/cpu_executor.hpp"

namespace ingestd {

struct local_transcriber_options {
  /// Tesseract languages, data path and page segmentation mode.
  tesseract_settings tesseract;
  /// File size, page count, pixel and render limits.
  document_limits limits;
  /// Per-document deadline from submission: queueing, decoding, OCR and preprocessing together.
  /// Past it the document fails with "ocr.deadline" (permanent: this document is too slow) or,
  /// when it never reached a worker, "ocr.busy" (transient: the pool was saturated).
  std::chrono::milliseconds document_timeout{std::chrono::minutes(5)};
  /// Defects below this confidence are left out of the result.
  double defect_report_threshold = 0.25;
};

/// The options the configuration sets (transcription.languages, max_file_bytes, max_pages,
/// timeout_seconds and other_languages); the others keep their defaults. The daemon and
/// `ingestd transcribe` share it.
local_transcriber_options make_local_transcriber_options(std::string languages,
                                                         size_t max_file_bytes, int max_pages,
                                                         std::chrono::seconds document_timeout,
                                                         std::string other_languages = {});

/// Performance: Debian's libtesseract uses OpenMP inside each recognition; with one OCR per
/// worker thread that oversubscribes the cores. Run the process with OMP_THREAD_LIMIT=1 (libgomp
/// reads it at start-up): on 2 cores bench/ocr measured 0.89 pages/s without it, 2.57 with it.
class local_transcriber final : public transcriber {
public:
  /// `executor` must outlive this object and every transcription in flight.
  local_transcriber(cpu_executor& executor, local_transcriber_options options = {});

  /// Pages are processed as separate CPU jobs (in parallel on a multi-worker executor); `done`
  /// runs on the executor thread that finished the last page.
  void transcribe(transcription_request request, callback<transcription> done) override;
  std::string name() const override { return "tesseract"; }
  bool waits_for_cpu() const override { return true; }

  const local_transcriber_options& options() const { return options_; }

private:
  cpu_executor& executor_;
  local_transcriber_options options_;
};

/// The whole file at `path`, for the command line; "ocr.read_failed" (permanent) when it cannot
/// be opened or read.
result<std::string> read_document(const std::string& path);

/// For `ingestd transcribe FILE`: reads the file, runs the local provider on a temporary thread
/// pool of `threads` workers (0 = all cores) whose pages go to `decoder`'s helpers (null: read in
/// this process) and waits. The type comes from the bytes; a missing file is "ocr.read_failed"
/// (permanent).
result<transcription>
transcribe_file_blocking(const std::string& path, const local_transcriber_options& options,
                         double quality_threshold = 0.7, bool allow_preprocessing = true,
                         unsigned threads = 0, std::shared_ptr<sandbox::decoder> decoder = nullptr);

} // namespace ingestd
