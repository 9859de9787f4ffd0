// One page through the local provider's steps; the same code runs in a decoder helper and, without
// helpers, in process (local_transcriber).
#include "adapters/ocr/page_work.hpp"

#include <cctype>
#include <cstring>
#include <string_view>

#include <opencv2/core.hpp>

#include "adapters/ocr/document_source.hpp"
#include "adapters/ocr/image_quality.hpp"
#include "adapters/ocr/language_guess.hpp"
#include "adapters/ocr/png.hpp"
#include "adapters/ocr/preprocess.hpp"
#include "adapters/ocr/tesseract_engine.hpp"
#include "messages/error_codes.hpp"

namespace ingestd {

namespace {

using clock_type = std::chrono::steady_clock;

std::string trim_text(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\f'))
    s.pop_back();
  return s;
}

/// Tesseract's page segmentation mode for "a single uniform block of text".
constexpr int block_segmentation = 6;

/// Amounts with two decimals ("12.40", "1.234,56") in a page's text.
int amounts_in(std::string_view text) {
  int n = 0;
  for (size_t i = 1; i + 2 < text.size(); ++i)
    if ((text[i] == '.' || text[i] == ',') && std::isdigit(static_cast<unsigned char>(text[i - 1]))
        && std::isdigit(static_cast<unsigned char>(text[i + 1]))
        && std::isdigit(static_cast<unsigned char>(text[i + 2]))
        && (i + 3 == text.size() || !std::isdigit(static_cast<unsigned char>(text[i + 3]))))
      ++n;
  return n;
}

/// Fewer amounts than one per four lines of text.
bool few_amounts(std::string_view text) {
  int lines = 0;
  bool letters = false;
  for (char c : text) {
    if (c == '\n') {
      lines += letters ? 1 : 0;
      letters = false;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      letters = true;
    }
  }
  lines += letters ? 1 : 0;
  return lines >= 4 && amounts_in(text) * 4 < lines;
}

gray_pixels pixels_of(const cv::Mat& gray) {
  gray_pixels out;
  if (gray.empty() || gray.type() != CV_8UC1)
    return out;
  out.width = gray.cols;
  out.height = gray.rows;
  out.pixels.resize(static_cast<size_t>(gray.cols) * static_cast<size_t>(gray.rows));
  for (int y = 0; y < gray.rows; ++y)
    std::memcpy(out.pixels.data() + static_cast<size_t>(y) * static_cast<size_t>(gray.cols),
                gray.ptr<uint8_t>(y), static_cast<size_t>(gray.cols));
  return out;
}

result<page_outcome> process_page(document_source& source, int index, const page_options& o,
                                  clock_type::time_point deadline) {
  auto content = source.page(index);
  if (!content)
    return content.error();
  page_outcome r;
  r.page.number = index + 1;
  if (content->native) {
    r.native = true;
    r.page.text = std::move(content->text);
    r.page.words = std::move(content->words);
    r.page.quality_score = 1;
    return r;
  }
  if (clock_type::now() >= deadline)
    return error::make_permanent(errc::ocr_deadline, "document deadline passed while decoding");
  const cv::Mat& gray = content->gray;
  auto measures = measure_image(gray);
  auto first = run_tesseract(gray, content->dpi, o.tesseract, deadline);
  if (!first)
    return first.error();
  double img = image_score(measures);
  r.page.quality_score = page_score(img, first->mean_confidence);
  r.page.defects = find_defects(measures, o.defect_report_threshold);
  r.page.text = trim_text(std::move(first->text));
  r.page.words = std::move(first->boxes);
  // A page may be read again, and of its readings the one sure of more characters is kept: the
  // right language's data, a cleaner image or a better layout give more confident words; a
  // binarisation that erased text gives fewer.
  double kept_chars = first->confident_chars;
  cv::Mat kept_image = gray;
  int kept_dpi = content->dpi;
  tesseract_settings kept_settings = o.tesseract;
  auto keep_if_surer = [&](const ocr_output& again, const cv::Mat& image, int dpi,
                           const tesseract_settings& settings) {
    if (again.confident_chars <= kept_chars)
      return false;
    kept_chars = again.confident_chars;
    auto m = measure_image(image);
    r.page.quality_score = page_score(image_score(m), again.mean_confidence);
    r.page.defects = find_defects(m, o.defect_report_threshold);
    r.page.text = trim_text(again.text);
    r.page.words = again.boxes;
    kept_image = image;
    kept_dpi = dpi;
    kept_settings = settings;
    return true;
  };
  bool read_as_block_done = false;
  auto read_as_block = [&]() -> result<bool> {
    if (read_as_block_done || kept_settings.page_segmentation_mode == block_segmentation)
      return false;
    read_as_block_done = true;
    auto block = kept_settings;
    block.page_segmentation_mode = block_segmentation;
    auto again = run_tesseract(kept_image, kept_dpi, block, deadline);
    if (!again)
      return again.error();
    return keep_if_surer(*again, kept_image, kept_dpi, block);
  };
  // 1. The page's language, when its words are of one of the other languages and not of the
  //    configured ones: read with that language's data (its letters and words).
  if (!o.tesseract.other_languages.empty()) {
    auto language = guess_language(r.page.text, split_languages(o.tesseract.other_languages));
    if (!language.empty()) {
      auto settings = o.tesseract;
      settings.languages = language;
      auto again = run_tesseract(gray, content->dpi, settings, deadline);
      if (!again && again.error().code != "ocr.tesseract_init")
        return again.error();
      if (again) // without the language's data the configured reading stands
        keep_if_surer(*again, gray, content->dpi, settings);
    }
  }
  // 2. A page that shows few amounts for its lines: the automatic layout may have taken them for
  //    a column of their own (a till receipt's prices, far right of their labels) and dropped
  //    it. Read as one uniform block of text instead.
  if (o.allow_preprocessing && few_amounts(r.page.text))
    if (auto e = read_as_block(); !e)
      return e.error();
  if (r.page.quality_score >= o.quality_threshold || !o.allow_preprocessing)
    return r;
  // 3. A poor page: the preprocessed image (deskewed, denoised, contrast restored), when there
  //    is something to fix (otherwise it would read the same pixels).
  auto pre = preprocess_page(gray, content->dpi, measures);
  if (!pre.steps.empty()) {
    auto second = run_tesseract(pre.image, pre.dpi, kept_settings, deadline);
    if (!second)
      return second.error();
    if (keep_if_surer(*second, pre.image, pre.dpi, kept_settings)) {
      r.preprocessed = true;
      r.image = pixels_of(pre.image);
    }
  }
  // 4. A poor page read as one uniform block of text, as in 2.
  if (auto e = read_as_block(); !e)
    return e.error();
  return r;
}

/// Task-specific recovery: a PDF page whose rendering or OCR failed is kept with its text layer
/// alone (no OCR), with a warning. The document's deadline and a busy node are not the page's
/// fault and stay errors; so does a page without a text layer to fall back on.
result<page_outcome> text_layer_instead(document_source& source, int index, error failed) {
  if (failed.code == errc::ocr_deadline || failed.code == errc::ocr_busy
      || source.kind() != file_kind::pdf)
    return failed;
  result<std::string> layer = error::make_permanent("ocr.internal", "");
  try {
    layer = source.text_layer(index);
  } catch (const std::exception& e) {
    layer = error::make_permanent("ocr.corrupt_file", e.what());
  }
  if (!layer)
    return failed;
  page_outcome r;
  r.page.number = index + 1;
  r.page.text = std::move(*layer);
  r.native = true;
  // Nothing vouches for what the page shows beyond its text layer.
  r.page.quality_score = r.page.text.empty() ? 0 : 0.5;
  r.warning = "page " + std::to_string(index + 1) + ": " + failed.describe()
              + "; kept its text layer only";
  return r;
}

} // namespace

result<page_outcome> transcribe_page(document_source& source, int index,
                                     const page_options& options, clock_type::time_point deadline) {
  result<page_outcome> r = error::make_permanent("ocr.internal", "page not processed");
  try {
    r = process_page(source, index, options, deadline);
  } catch (const cv::Exception& e) {
    r = error::make_permanent("ocr.corrupt_file",
                              std::string{"image processing failed: "} + e.what());
  } catch (const std::bad_alloc&) {
    r = error::make_permanent("ocr.too_large", "out of memory processing a page");
  } catch (const std::exception& e) {
    r = error::make_permanent("ocr.internal", std::string{"page processing failed: "} + e.what());
  }
  if (!r)
    r = text_layer_instead(source, index, std::move(r.error()));
  return r;
}

result<outlined_page> open_and_transcribe_page(const std::shared_ptr<const std::string>& bytes,
                                               std::string_view mime_type, int index,
                                               const page_options& options,
                                               clock_type::time_point deadline) {
  result<std::shared_ptr<document_source>> src = error::make_permanent("ocr.internal", "");
  try {
    src = open_document(bytes, mime_type, options.limits, index);
  } catch (const std::bad_alloc&) {
    src = error::make_permanent("ocr.too_large", "out of memory decoding the document");
  } catch (const std::exception& e) {
    src = error::make_permanent("ocr.corrupt_file", std::string{"cannot decode: "} + e.what());
  }
  if (!src)
    return src.error();
  auto& source = **src;
  if (index < 0 || index >= source.page_count())
    return error::make_permanent("ocr.internal", "page " + std::to_string(index + 1)
                                                     + " of a document with "
                                                     + std::to_string(source.page_count()));
  auto page = transcribe_page(source, index, options, deadline);
  if (!page)
    return page.error();
  return outlined_page{source.kind(), source.page_count(), std::move(*page),
                       index == 0 ? source.metadata() : document_metadata{}};
}

gray_pixels preprocessed_page(const std::shared_ptr<const std::string>& bytes,
                              std::string_view mime_type, const document_limits& limits) {
  try {
    auto source = open_document(bytes, mime_type, limits);
    if (!source || (*source)->page_count() != 1)
      return {};
    auto page = (*source)->page(0);
    if (!page || page->native || page->gray.empty())
      return {};
    auto pre = preprocess_page(page->gray, page->dpi, measure_image(page->gray));
    if (pre.steps.empty())
      return {};
    return pixels_of(pre.image);
  } catch (const std::exception&) {
    return {}; // a page OpenCV cannot clean up keeps the first reading
  }
}

std::string encode_gray_png(const gray_pixels& image) {
  if (!image.valid())
    return {};
  return png::from_gray(reinterpret_cast<const uint8_t*>(image.pixels.data()), image.width,
                        image.height, static_cast<size_t>(image.width));
}

} // namespace ingestd
