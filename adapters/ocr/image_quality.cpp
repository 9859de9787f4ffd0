// How the local provider scores a page. Measures and defect confidences were calibrated on the
// corpus in tests/fixtures (200 dpi scans, degraded copies); bench/ocr prints them.
//
// The score
// ---------
// 1. Image measures (OpenCV, on the 8-bit grey page):
//    - background = 90th percentile, ink = 0.5th percentile, contrast = background - ink;
//    - noise sigma: Immerkaer's estimator (mean |Laplacian-of-Laplacian 3x3 kernel| *
//    sqrt(pi/2)/6);
//    - sharpness: 99.5th percentile of the Sobel gradient magnitude / (8 * contrast): the steepest
//      ink edges relative to how dark the ink is, so a faint but sharp page is not "blurry";
//    - text height: median height of character-sized connected components after Otsu;
//    - skew: the angle whose horizontal projection profile of the Otsu ink has the largest
//      variance (coarse 0.5 degree search in +-8 degrees, refined in 0.1 degree steps).
// 2. Each defect gets a confidence in [0, 1], a linear ramp between "fine" and "certainly bad":
//      blurry          sharpness      0.38 -> 0.22
//      noisy           noise sigma    4    -> 16 grey levels
//      dark            background     170  -> 100
//      faint           ink            120  -> 180 (and background not dark)
//      low_contrast    contrast       130  -> 70
//      text_too_small  text height    14   -> 8 px
//      skewed          |skew|         0.5  -> 2 degrees
// 3. image score = product over defects of (1 - weight * confidence), weights: blurry 0.6,
//    skewed 0.6 (deskewing is cheap and fixes the reading order of tables), noisy 0.5,
//    text_too_small 0.5, dark 0.4, faint 0.4, low_contrast 0.3. Several mild defects compound;
//    one certain defect alone takes the score to 0.4-0.7.
// 4. page score = 0.5 * image score + 0.5 * (Tesseract mean word confidence / 100), or the image
//    score alone before OCR. A clean 200-300 dpi scan scores ~0.9; native PDF text scores 1.
// 5. The document's score is the minimum over its pages (transcription.hpp).

#include "adapters/ocr/image_quality.hpp"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

namespace ingestd {

namespace {

double percentile(const cv::Mat& gray, double pct) {
  int hist[256] = {};
  for (int r = 0; r < gray.rows; ++r) {
    const uint8_t* p = gray.ptr<uint8_t>(r);
    for (int c = 0; c < gray.cols; ++c)
      ++hist[p[c]];
  }
  double total = static_cast<double>(gray.total());
  double want = total * pct / 100.0;
  double acc = 0;
  for (int v = 0; v < 256; ++v) {
    acc += hist[v];
    if (acc >= want)
      return v;
  }
  return 255;
}

double float_percentile(const cv::Mat& m, double pct) {
  // m is CV_32F; a 1024-bin histogram over [0, max] is precise enough here.
  double mx = 0;
  cv::minMaxLoc(m, nullptr, &mx);
  if (mx <= 0)
    return 0;
  std::vector<double> hist(1024, 0);
  double scale = 1023.0 / mx;
  for (int r = 0; r < m.rows; ++r) {
    const float* p = m.ptr<float>(r);
    for (int c = 0; c < m.cols; ++c)
      hist[static_cast<size_t>(p[c] * scale)] += 1;
  }
  double want = static_cast<double>(m.total()) * pct / 100.0;
  double acc = 0;
  for (size_t i = 0; i < hist.size(); ++i) {
    acc += hist[i];
    if (acc >= want)
      return static_cast<double>(i) / scale;
  }
  return mx;
}

double ramp(double value, double fine, double bad) {
  double t = (value - fine) / (bad - fine);
  return std::clamp(t, 0.0, 1.0);
}

double profile_score(const cv::Mat& ink, double degrees) {
  cv::Point2f center(static_cast<float>(ink.cols) / 2, static_cast<float>(ink.rows) / 2);
  cv::Mat rot = cv::getRotationMatrix2D(center, degrees, 1.0);
  cv::Mat rotated;
  cv::warpAffine(ink, rotated, rot, ink.size(), cv::INTER_NEAREST, cv::BORDER_CONSTANT, 0);
  cv::Mat rows;
  cv::reduce(rotated, rows, 1, cv::REDUCE_SUM, CV_64F);
  cv::Scalar mean, stddev;
  cv::meanStdDev(rows, mean, stddev);
  return stddev[0] * stddev[0];
}

double estimate_skew(const cv::Mat& bw) {
  // Work on a copy about 1000 px wide: enough for 0.1 degree, cheap to rotate 25 times.
  cv::Mat small = bw;
  if (bw.cols > 1000) {
    double f = 1000.0 / bw.cols;
    cv::resize(bw, small, cv::Size(), f, f, cv::INTER_AREA);
  }
  if (cv::countNonZero(small) < 50)
    return 0;
  double best = 0, best_score = -1;
  for (double a = -8; a <= 8.001; a += 0.5) {
    double s = profile_score(small, a);
    if (s > best_score) {
      best_score = s;
      best = a;
    }
  }
  double coarse = best;
  for (double a = coarse - 0.4; a <= coarse + 0.401; a += 0.1) {
    double s = profile_score(small, a);
    if (s > best_score) {
      best_score = s;
      best = a;
    }
  }
  // Rotating by `best` straightens the lines, so the page itself is skewed by -best.
  return -best;
}

struct defect_conf {
  const char* name;
  double confidence;
  double weight;
};

std::vector<defect_conf> confidences(const image_measures& m) {
  bool has_text = m.components >= 10;
  return {
      {"blurry", has_text ? ramp(m.sharpness, 0.38, 0.22) : 0, 0.6},
      {"noisy", ramp(m.noise_sigma, 4, 16), 0.5},
      {"dark", ramp(m.background, 170, 100), 0.4},
      {"faint", m.background >= 170 ? ramp(m.ink, 120, 180) : 0, 0.4},
      {"low_contrast", ramp(m.contrast, 130, 70), 0.3},
      {"text_too_small", has_text ? ramp(m.text_height_px, 14, 8) : 0, 0.5},
      {"skewed", has_text ? ramp(std::abs(m.skew_degrees), 0.5, 2.0) : 0, 0.6},
  };
}

} // namespace

image_measures measure_image(const cv::Mat& gray) {
  image_measures m;
  if (gray.empty() || gray.type() != CV_8UC1)
    return m;
  m.background = percentile(gray, 90);
  m.ink = percentile(gray, 0.5);
  m.contrast = m.background - m.ink;

  cv::Mat f;
  gray.convertTo(f, CV_32F);
  if (gray.rows > 2 && gray.cols > 2) {
    cv::Mat kernel = (cv::Mat_<float>(3, 3) << 1, -2, 1, -2, 4, -2, 1, -2, 1);
    cv::Mat conv;
    cv::filter2D(f, conv, CV_32F, kernel);
    cv::Mat inner = cv::abs(conv(cv::Rect(1, 1, gray.cols - 2, gray.rows - 2)));
    m.noise_sigma
        = std::sqrt(CV_PI / 2) * cv::sum(inner)[0] / (6.0 * (gray.cols - 2) * (gray.rows - 2));
  }

  cv::Mat gx, gy, mag;
  cv::Sobel(f, gx, CV_32F, 1, 0);
  cv::Sobel(f, gy, CV_32F, 0, 1);
  cv::magnitude(gx, gy, mag);
  m.sharpness = float_percentile(mag, 99.5) / (8.0 * std::max(m.contrast, 1.0));

  cv::Mat bw;
  cv::threshold(gray, bw, 0, 255, cv::THRESH_BINARY_INV | cv::THRESH_OTSU);
  cv::Mat labels, stats, centroids;
  int n = cv::connectedComponentsWithStats(bw, labels, stats, centroids, 8, CV_32S);
  std::vector<int> heights;
  for (int i = 1; i < n; ++i) {
    int w = stats.at<int>(i, cv::CC_STAT_WIDTH);
    int h = stats.at<int>(i, cv::CC_STAT_HEIGHT);
    int area = stats.at<int>(i, cv::CC_STAT_AREA);
    if (h >= 3 && h <= 200 && w <= 5 * h && area >= 6)
      heights.push_back(h);
  }
  m.components = static_cast<int>(heights.size());
  if (!heights.empty()) {
    std::nth_element(heights.begin(), heights.begin() + heights.size() / 2, heights.end());
    m.text_height_px = heights[heights.size() / 2];
  }
  m.skew_degrees = estimate_skew(bw);
  return m;
}

std::vector<quality_defect> find_defects(const image_measures& m, double report_threshold) {
  std::vector<quality_defect> out;
  for (const auto& d : confidences(m))
    if (d.confidence >= report_threshold && d.confidence > 0)
      out.push_back(quality_defect{d.name, std::round(d.confidence * 1000) / 1000});
  return out;
}

double image_score(const image_measures& m) {
  double s = 1;
  for (const auto& d : confidences(m))
    s *= 1 - d.weight * d.confidence;
  return std::clamp(s, 0.0, 1.0);
}

double page_score(double image_part, double ocr_mean_confidence) {
  if (ocr_mean_confidence < 0)
    return std::clamp(image_part, 0.0, 1.0);
  double ocr = std::clamp(ocr_mean_confidence / 100.0, 0.0, 1.0);
  return std::clamp(0.5 * image_part + 0.5 * ocr, 0.0, 1.0);
}

} // namespace ingestd
