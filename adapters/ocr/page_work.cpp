// One page through the local provider's steps; the same code runs in a decoder helper and, without
// helpers, in process (local_transcriber).
#include "adapters/ocr/page_work.hpp"

#include <cstring>

#include <opencv2/core.hpp>

#include "adapters/ocr/document_source.hpp"
#include "adapters/ocr/image_quality.hpp"
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
  if (r.page.quality_score >= o.quality_threshold || !o.allow_preprocessing)
    return r;
  auto pre = preprocess_page(gray, content->dpi, measures);
  if (pre.steps.empty()) // nothing to fix: a second pass would read the same pixels
    return r;
  auto second = run_tesseract(pre.image, pre.dpi, o.tesseract, deadline);
  if (!second)
    return second.error();
  // Keep the run that is sure of more characters: a cleaner image gives more confident words;
  // a binarisation that erased text gives fewer.
  if (second->confident_chars > first->confident_chars) {
    auto pre_measures = measure_image(pre.image);
    r.page.quality_score = page_score(image_score(pre_measures), second->mean_confidence);
    r.page.defects = find_defects(pre_measures, o.defect_report_threshold);
    r.page.text = trim_text(std::move(second->text));
    r.preprocessed = true;
    r.image = pixels_of(pre.image);
  }
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
  return outlined_page{source.kind(), source.page_count(), std::move(*page)};
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
  cv::Mat view(image.height, image.width, CV_8UC1, const_cast<char*>(image.pixels.data()));
  return encode_png(view);
}

} // namespace ingestd
