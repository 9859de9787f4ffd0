// Page images for the review desk: a PDF page rendered to PNG with poppler, a scan shown as
// stored (PNG, JPEG) or converted to PNG (TIFF). Pure functions: the service runs them on the CPU
// pool and caches their output in object storage.
#pragma once

#include <string>
#include <string_view>

#include "messages/result.hpp"

namespace ingestd {

struct page_image {
  /// The image bytes and their type ("image/png" or "image/jpeg").
  std::string bytes;
  std::string content_type;
  /// Pages in the document (1 for a single image).
  int page_count = 1;
};

/// Page `index` (0-based) of the document `bytes` of type `mime_type` ("application/pdf",
/// "image/png", "image/jpeg", "image/tiff"), PDFs rendered at `dpi` but at most `max_width`
/// pixels wide. Errors (permanent): "review.page_out_of_range", "review.unreadable" (a file
/// poppler or Leptonica cannot open, a TIFF page of more than 60 million
/// pixels, an encrypted PDF), "review.unsupported_type".
result<page_image> render_page(const std::string& bytes, std::string_view mime_type, int index,
                               int dpi = 110, int max_width = 1800);

} // namespace ingestd
