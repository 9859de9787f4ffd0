// Page image quality for the local provider: OpenCV measures of one grey page image, the defect
// list they imply, and the page score that also weighs in Tesseract's word confidence.
#pragma once

#include <vector>

#include <opencv2/core.hpp>

#include "messages/transcription.hpp"

namespace ingestd {

/// Raw measures of an 8-bit grey page (see image_quality.cpp for how each is taken).
struct image_measures {
  /// 90th percentile of intensity: the paper.
  double background = 0;
  /// 0.5th percentile of intensity: the darkest ink.
  double ink = 0;
  /// background - ink.
  double contrast = 0;
  /// Immerkaer's noise sigma in grey levels.
  double noise_sigma = 0;
  /// Strongest edges (99.5th percentile of the Sobel magnitude) relative to the contrast; about
  /// 0.45 for a sharp 200-300 dpi scan, below 0.25 when blurred.
  double sharpness = 0;
  /// Median height in pixels of character-sized connected components (0 when none).
  double text_height_px = 0;
  /// Number of character-sized components found.
  int components = 0;
  /// Dominant text-line angle in degrees (positive = counter-clockwise), from projection profiles.
  double skew_degrees = 0;
};

image_measures measure_image(const cv::Mat& gray);

/// Defects with confidence >= `report_threshold`, named as Document AI names them without the
/// "quality/defect_" prefix: blurry, noisy, dark, faint, low_contrast, text_too_small, skewed.
std::vector<quality_defect> find_defects(const image_measures& m, double report_threshold = 0.25);

/// The image part of the score in [0, 1], from every defect's confidence.
double image_score(const image_measures& m);

/// The page score in [0, 1]: image score and OCR mean word confidence (0..100) combined; a
/// negative confidence means no OCR ran (image score alone).
double page_score(double image_part, double ocr_mean_confidence);

} // namespace ingestd
