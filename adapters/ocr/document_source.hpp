// Opens a document for the local provider: finds its type from the magic bytes, enforces the
// limits, and hands out pages one at a time as native PDF text or an 8-bit grey image.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <opencv2/core.hpp>

#include "adapters/ocr/ocr_options.hpp"
#include "messages/file_type.hpp"
#include "messages/result.hpp"
#include "messages/transcription.hpp"

namespace ingestd {

struct page_content {
  bool native = false;
  std::string text;
  /// The text layer's words with their boxes (native pages).
  std::vector<page_word> words;
  cv::Mat gray;
  int dpi = 300;
};

class document_source {
public:
  virtual ~document_source() = default;
  virtual int page_count() const = 0;
  virtual file_kind kind() const = 0;
  /// Page `index` (0-based). Thread-safe: pages may be fetched from several workers at once.
  virtual result<page_content> page(int index) = 0;
  /// Page `index`'s text layer alone, however short (a PDF's; other kinds have none: an
  /// error): what a page whose rendering or OCR failed is kept with.
  /// The file's own metadata (transcription.hpp's document_metadata); none for images.
  virtual document_metadata metadata() const { return {}; }
  virtual result<std::string> text_layer(int index) {
    return error::make_permanent("ocr.no_text_layer",
                                 "page " + std::to_string(index + 1) + " has no text layer");
  }
};

/// Errors (all permanent): ocr.empty_file, ocr.too_large, ocr.unsupported_type,
/// ocr.corrupt_file, ocr.encrypted_pdf, ocr.too_many_pages. `bytes` must outlive the source.
/// With `only_page`, a TIFF's pages are counted and that page alone is decoded (page() of
/// another index is an error): what a decoder helper opens for one page's request.
result<std::shared_ptr<document_source>>
open_document(const std::shared_ptr<const std::string>& bytes, std::string_view mime_type,
              const document_limits& limits, std::optional<int> only_page = std::nullopt);

/// The document's page count without decoding a page (a PDF's from its page tree, a TIFF's from
/// its directories, 1 for PNG and JPEG); the errors of open_document for what cannot be opened.
result<int> count_pages(const std::string& bytes, std::string_view mime_type,
                        const document_limits& limits);

} // namespace ingestd
