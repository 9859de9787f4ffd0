// The result of transcribing one document, whatever the provider.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ingestd {

/// A quality defect, named like Document AI's ("blurry", "noisy", "dark", "faint",
/// "low_contrast", "text_too_small", "skewed", ...), with a confidence in [0, 1].
struct quality_defect {
  std::string type;
  double confidence = 0;
};

/// What a file says about itself (a PDF's document information): "title", "author",
/// "subject", "keywords", "creator", "producer", and "created" and "modified" as ISO 8601 UTC,
/// in that order, only those present. The sender's claims, kept as text: never trusted.
using document_metadata = std::vector<std::pair<std::string, std::string>>;

/// At most this many bytes of each metadata value are kept (cut on a character boundary).
inline constexpr size_t max_metadata_value_bytes = 1024;

/// A word on a page and where it is: its box as fractions of the page's width and height from
/// the top left corner, the same on any rendering of the page. Where an extracted value came from
/// (adapters/extraction/provenance.hpp) and what a reviewer clicks on the desk.
struct page_word {
  std::string text;
  float left = 0;
  float top = 0;
  float right = 0;
  float bottom = 0;
};

/// At most this many words of a page keep their boxes; at most this many bytes of each word.
inline constexpr size_t max_page_words = 10000;
inline constexpr size_t max_word_bytes = 64;

struct transcription_page {
  int32_t number = 1;
  std::string text;
  /// Quality score in [0, 1]; 1 for native PDF text.
  double quality_score = 1;
  std::vector<quality_defect> defects;
  /// The page's words with their boxes, in reading order (Tesseract's words, the PDF's text
  /// boxes; empty for providers that give none).
  std::vector<page_word> words;
};

struct transcription {
  std::string text;
  std::vector<transcription_page> pages;
  int32_t page_count = 0;
  /// Overall quality in [0, 1] (the minimum over pages for the local provider).
  double quality_score = 0;
  /// Text came from the PDF's text layer, not OCR.
  bool native_text = false;
  /// OCR ran again on a preprocessed image, and that result is the one kept.
  bool preprocessed = false;
  /// "tesseract", "document_ai", ...
  std::string provider;
  /// What went wrong but was recovered (task-specific recovery): a page kept with its
  /// text layer only, a provider that refused the document and the one that took over, ...
  std::vector<std::string> warnings;
  int64_t duration_ms = 0;
  /// The file's own metadata (empty for images and for providers that do not read it).
  document_metadata metadata;
  /// The file derived from the document that the reading came from, stored on its own (not
  /// serialised to JSON): the preprocessed image of a better reading (`preprocessed`), or the
  /// PDF an office document was converted to. Its file extension ("png", "pdf").
  std::string derived_file;
  std::string derived_ext;
};

} // namespace ingestd
