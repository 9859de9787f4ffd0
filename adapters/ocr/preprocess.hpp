// OpenCV clean-up of a poor page before a second OCR pass (when the quality score
// is below the threshold): deskew, upscale, denoise, contrast, sharpen, binarise as needed.
#pragma once

#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "adapters/ocr/image_quality.hpp"

namespace ingestd {

struct preprocess_result {
  /// 8-bit grey page (binary when unevenly lit), possibly rotated and scaled.
  cv::Mat image;
  /// The image's resolution after scaling (the input's dpi times the scale factor).
  int dpi = 300;
  /// The steps applied, in order, e.g. {"deskew", "denoise", "contrast"}.
  std::vector<std::string> steps;
};

/// Applies the steps the measures call for (none for a clean page). Pure function.
preprocess_result preprocess_page(const cv::Mat& gray, int dpi, const image_measures& m);

} // namespace ingestd
