// Preprocessing steps chosen from the page's measures. Each step is there for one defect; the
// order matters: geometry first (deskew, scale), then noise, then contrast, then sharpen, and a
// local binarisation only for unevenly lit paper.

#include "adapters/ocr/preprocess.hpp"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>
#include <opencv2/photo.hpp>

namespace ingestd {

namespace {

/// 95th minus 5th percentile of an 8-bit image.
double percentile_range(const cv::Mat& img) {
  int hist[256] = {};
  for (int r = 0; r < img.rows; ++r) {
    const uint8_t* p = img.ptr<uint8_t>(r);
    for (int c = 0; c < img.cols; ++c)
      ++hist[p[c]];
  }
  double total = static_cast<double>(img.total()), acc = 0;
  int lo = -1, hi = 255;
  for (int v = 0; v < 256; ++v) {
    acc += hist[v];
    if (lo < 0 && acc >= total * 0.05)
      lo = v;
    if (acc >= total * 0.95) {
      hi = v;
      break;
    }
  }
  return hi - std::max(lo, 0);
}

} // namespace

preprocess_result preprocess_page(const cv::Mat& gray, int dpi, const image_measures& m) {
  preprocess_result out;
  out.dpi = dpi > 0 ? dpi : 300;
  cv::Mat img = gray.clone();
  auto defects = find_defects(m, 0.25);
  auto has = [&](const char* name) {
    return std::any_of(defects.begin(), defects.end(),
                       [&](const quality_defect& d) { return d.type == name; });
  };

  if (has("skewed")) {
    // Rotate about the centre onto an enlarged canvas so no corner of the text is cut off.
    double a = m.skew_degrees;
    cv::Point2f c(static_cast<float>(img.cols) / 2, static_cast<float>(img.rows) / 2);
    // skew_degrees is the page's own rotation (counter-clockwise positive): undo it.
    cv::Mat rot = cv::getRotationMatrix2D(c, -a, 1.0);
    double rad = std::abs(a) * CV_PI / 180;
    int w = static_cast<int>(img.cols * std::cos(rad) + img.rows * std::sin(rad));
    int h = static_cast<int>(img.rows * std::cos(rad) + img.cols * std::sin(rad));
    rot.at<double>(0, 2) += (w - img.cols) / 2.0;
    rot.at<double>(1, 2) += (h - img.rows) / 2.0;
    cv::Mat r;
    cv::warpAffine(img, r, rot, cv::Size(w, h), cv::INTER_CUBIC, cv::BORDER_CONSTANT,
                   cv::Scalar(m.background));
    img = r;
    out.steps.emplace_back("deskew");
  }
  if (has("text_too_small") && m.text_height_px > 0) {
    // Tesseract reads best with characters about 20-30 px tall.
    double f = std::clamp(22.0 / m.text_height_px, 1.0, 4.0);
    cv::Mat r;
    cv::resize(img, r, cv::Size(), f, f, cv::INTER_CUBIC);
    img = r;
    out.dpi = static_cast<int>(out.dpi * f);
    out.steps.emplace_back("upscale");
  }
  if (has("noisy")) {
    // Median removes salt and pepper; non-local means then flattens Gaussian noise while keeping
    // strokes, with a strength that follows the measured sigma.
    cv::Mat r;
    cv::medianBlur(img, r, 3);
    float h = static_cast<float>(std::clamp(m.noise_sigma * 0.9, 10.0, 60.0));
    cv::fastNlMeansDenoising(r, img, h, 7, 21);
    out.steps.emplace_back("denoise");
  }
  if (has("dark") || has("faint") || has("low_contrast")) {
    // Stretch the ink..paper range to full scale, then CLAHE for uneven lighting.
    cv::Mat f;
    double lo = m.ink, hi = std::max(m.background, m.ink + 1);
    img.convertTo(f, CV_32F);
    f = (f - lo) * (255.0 / (hi - lo));
    f.convertTo(img, CV_8U);
    auto clahe = cv::createCLAHE(2.0, cv::Size(8, 8));
    cv::Mat r;
    clahe->apply(img, r);
    img = r;
    out.steps.emplace_back("contrast");
  }
  if (has("blurry")) {
    // Unsharp mask: img + amount * (img - blur).
    cv::Mat blur, r;
    double sigma = std::max(1.0, m.text_height_px / 10.0);
    cv::GaussianBlur(img, blur, cv::Size(), sigma);
    cv::addWeighted(img, 2.0, blur, -1.0, 0, r);
    img = r;
    out.steps.emplace_back("sharpen");
  }
  // Binarise only when the paper itself is unevenly lit (its brightness, estimated by a closing
  // that removes the text, varies by more than 40 grey levels): then a local (adaptive) threshold
  // is what Tesseract's global Otsu cannot do. Otherwise the cleaned grey page goes to Tesseract
  // as it is: its LSTM recogniser reads grey pixels, and on the corpus a global Otsu here raised
  // the error rate (noise 0.10 -> 0.25, blur 0.003 -> 0.11; bench/ocr).
  double th
      = m.text_height_px > 0 ? m.text_height_px * (img.cols / std::max(1.0, double(gray.cols))) : 0;
  if (th >= 6) {
    cv::Mat small, paper;
    double f = std::min(1.0, 600.0 / std::max(img.cols, img.rows));
    cv::resize(img, small, cv::Size(), f, f, cv::INTER_AREA);
    int k = std::max(3, static_cast<int>(th * f * 3) | 1);
    cv::morphologyEx(small, paper, cv::MORPH_CLOSE,
                     cv::getStructuringElement(cv::MORPH_RECT, cv::Size(k, k)));
    if (percentile_range(paper) > 40) {
      int block = std::clamp(static_cast<int>(th * 2) | 1, 15, 101);
      cv::Mat bw;
      cv::adaptiveThreshold(img, bw, 255, cv::ADAPTIVE_THRESH_GAUSSIAN_C, cv::THRESH_BINARY, block,
                            15);
      img = bw;
      out.steps.emplace_back("binarise");
    }
  }
  out.image = img;
  return out;
}

} // namespace ingestd
