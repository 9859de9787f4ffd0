// One page of a document through the local provider's steps (render or decode, OCR, quality,
// preprocessing and a second OCR when poor, the text layer when that fails): the work a decoder
// helper does for a transcribe_page request, and what local_transcriber runs in process when it
// has no helpers. Free of OpenCV and Tesseract headers: the sandbox protocol encodes these types.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/ocr/ocr_options.hpp"
#include "messages/file_type.hpp"
#include "messages/result.hpp"
#include "messages/transcription.hpp"

namespace ingestd {

class document_source;

/// What a page's transcription depends on besides the document.
struct page_options {
  tesseract_settings tesseract;
  document_limits limits;
  /// Below it (and when allowed) the page is preprocessed and read again.
  double quality_threshold = 0.7;
  bool allow_preprocessing = true;
  /// Defects below this confidence are left out.
  double defect_report_threshold = 0.25;
};

/// An 8-bit grey image as rows of `width` bytes.
struct gray_pixels {
  int32_t width = 0;
  int32_t height = 0;
  std::string pixels;

  bool empty() const { return pixels.empty(); }
  /// width * height == pixels.size(), both positive.
  bool valid() const {
    return width > 0 && height > 0
           && static_cast<uint64_t>(width) * static_cast<uint64_t>(height) == pixels.size();
  }
};

/// One page's result.
struct page_outcome {
  transcription_page page;
  /// The text came from the PDF's text layer.
  bool native = false;
  /// Why the page was kept with its text layer only (its rendering or OCR failed).
  std::string warning;
  /// The second reading of the preprocessed image is the one kept; `image` holds that image.
  bool preprocessed = false;
  gray_pixels image;
};

/// Page `index` of `source`, with the task-specific recovery (a PDF page whose rendering or OCR
/// failed keeps its text layer, with a warning). Exceptions of the libraries become errors:
/// "ocr.corrupt_file", "ocr.too_large" (std::bad_alloc), "ocr.internal".
result<page_outcome> transcribe_page(document_source& source, int index,
                                     const page_options& options,
                                     std::chrono::steady_clock::time_point deadline);

/// The document's kind, page count and (with page 0) metadata, and page `index` transcribed:
/// what a helper answers to
/// a transcribe_page request (the document is opened for that page alone).
struct outlined_page {
  file_kind kind = file_kind::pdf;
  int32_t page_count = 0;
  page_outcome outcome;
  /// The file's own metadata, with the first page (index 0) only.
  document_metadata metadata;
};
result<outlined_page> open_and_transcribe_page(const std::shared_ptr<const std::string>& bytes,
                                               std::string_view mime_type, int index,
                                               const page_options& options,
                                               std::chrono::steady_clock::time_point deadline);

/// The single page of `bytes` preprocessed, or an empty image when there is nothing to improve:
/// more than one page, a page with a text layer, no step the page calls for, or a page that
/// cannot be read (recovering_transcriber's second pass).
gray_pixels preprocessed_page(const std::shared_ptr<const std::string>& bytes,
                              std::string_view mime_type, const document_limits& limits);

/// PNG bytes of an 8-bit grey image (empty when it is not valid()).
std::string encode_gray_png(const gray_pixels& image);

} // namespace ingestd
