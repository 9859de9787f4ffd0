// Settings of the local provider that callers configure (the daemon's config, the CLI), kept
// free of OpenCV and Tesseract headers so including them costs nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ingestd {

struct tesseract_settings {
  /// Tesseract language string, e.g. "eng+deu".
  std::string languages = "eng+deu";
  /// Languages a page may be read in again when its words are of one of them and not of
  /// `languages` ("fra+nld+spa+ita+pol"; empty: never). Missing language data is skipped.
  std::string other_languages;
  /// Folder holding *.traineddata; empty = Tesseract's default (TESSDATA_PREFIX or the package's).
  std::string tessdata_path;
  /// Page segmentation mode (tesseract::PageSegMode); 3 = fully automatic.
  int page_segmentation_mode = 3;
};

struct document_limits {
  size_t max_file_bytes = size_t{50} * 1024 * 1024;
  int max_pages = 50;
  /// Largest page image accepted (decoded or rendered); rendering lowers the dpi to stay under.
  int64_t max_page_pixels = 60'000'000;
  /// PDF rendering resolution for pages without a text layer.
  int render_dpi = 300;
  /// A PDF page with at least this many non-space characters in its text layer is "native".
  int min_native_chars = 16;
};

} // namespace ingestd
