// PNG images of pages, written and read with Leptonica (the library Tesseract reads pages with):
// the OCR's preprocessed page, the review desk's rendered PDF pages and its TIFF scans. OpenCV's
// image codecs would bring about sixty more shared libraries (GDAL and the formats it reads) into
// every process that links them, 0.17 s of CPU at each start of ingestd and of each decoder
// helper.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "messages/result.hpp"

namespace ingestd::png {

/// PNG of 8-bit grey pixels, rows `stride` bytes apart, at zlib level `compression` (0-9).
/// Empty when it cannot be encoded.
std::string from_gray(const uint8_t* pixels, int width, int height, size_t stride,
                      int compression = 1);

/// PNG (RGB, the alpha left out) of 32-bit pixels stored B, G, R, A in memory: poppler's ARGB32
/// on a little-endian machine. Empty when it cannot be encoded.
std::string from_bgra(const uint8_t* pixels, int width, int height, size_t stride,
                      int compression = 1);

/// PNG of the first page of a TIFF. Errors (permanent, with `code`): the TIFF cannot be read, or
/// its page has more than `max_pixels` pixels (refused before it is decoded).
result<std::string> from_tiff(const std::string& bytes, int64_t max_pixels, std::string_view code,
                              int compression = 1);

} // namespace ingestd::png
