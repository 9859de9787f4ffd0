// One page through Tesseract on the calling thread, with one TessBaseAPI per thread (Tesseract
// objects are not thread-safe) initialised once and reused, and a deadline it cannot overrun.
#pragma once

#include <chrono>
#include <string>

#include <opencv2/core.hpp>

#include "adapters/ocr/ocr_options.hpp"
#include "messages/result.hpp"
#include "messages/transcription.hpp"

namespace ingestd {

struct ocr_output {
  std::string text;
  /// Mean word confidence 0..100 (0 when no word was found).
  double mean_confidence = 0;
  int words = 0;
  /// Sum over words of confidence/100 * characters: how much text Tesseract is sure of. Used to
  /// pick the better of two OCR runs of the same page.
  double confident_chars = 0;
  /// The words with their boxes (fractions of the image's size), in reading order.
  std::vector<page_word> boxes;
};

/// OCRs an 8-bit grey image. Errors: "ocr.deadline" (permanent) when the deadline passes during
/// recognition; "ocr.tesseract_init" (permanent: missing language data) when Tesseract cannot
/// start with these settings.
result<ocr_output> run_tesseract(const cv::Mat& gray, int dpi, const tesseract_settings& settings,
                                 std::chrono::steady_clock::time_point deadline);

} // namespace ingestd
