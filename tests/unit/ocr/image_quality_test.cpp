// The OpenCV quality measures find each degradation of the corpus and none on clean scans;
// preprocessing removes what it was called for.

#include <algorithm>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>

#include "adapters/ocr/image_quality.hpp"
#include "adapters/ocr/png.hpp"
#include "adapters/ocr/preprocess.hpp"
#include "tests/support/ocr/ocr_support.hpp"

using namespace ingestd;

namespace {

cv::Mat load(const std::string& file) {
  auto m = cv::imread(test::corpus_dir() + "/" + file, cv::IMREAD_GRAYSCALE);
  EXPECT_FALSE(m.empty()) << file;
  return m;
}

double conf(const std::vector<quality_defect>& ds, const std::string& type) {
  for (const auto& d : ds)
    if (d.type == type)
      return d.confidence;
  return 0;
}

std::string names(const std::vector<quality_defect>& ds) {
  std::string s;
  for (const auto& d : ds)
    s += d.type + "=" + std::to_string(d.confidence) + " ";
  return s;
}

} // namespace

TEST(image_quality, clean_scans_have_no_defects_and_score_high) {
  for (const auto& e : test::corpus_manifest()) {
    if (e.kind != "clean_scan" || e.mime_type != "image/png")
      continue;
    auto m = measure_image(load(e.file));
    auto ds = find_defects(m);
    EXPECT_TRUE(ds.empty()) << e.file << ": " << names(ds);
    EXPECT_GT(image_score(m), 0.9) << e.file;
    EXPECT_LT(std::abs(m.skew_degrees), 0.5) << e.file;
  }
}

TEST(image_quality, each_degradation_is_named) {
  const std::vector<std::pair<std::string, std::string>> expected
      = {{"blur", "blurry"}, {"noise", "noisy"},    {"dark", "dark"},
         {"faint", "faint"}, {"rotated", "skewed"}, {"lowres", "text_too_small"}};
  int seen = 0;
  for (const auto& e : test::corpus_manifest()) {
    if (e.kind != "degraded_scan")
      continue;
    auto it = std::find_if(expected.begin(), expected.end(),
                           [&](const auto& p) { return p.first == e.degradation; });
    ASSERT_NE(it, expected.end()) << e.degradation;
    auto m = measure_image(load(e.file));
    auto ds = find_defects(m);
    EXPECT_GE(conf(ds, it->second), 0.5) << e.file << ": " << names(ds);
    EXPECT_LT(image_score(m), 0.8) << e.file << ": " << names(ds);
    if (e.degradation == "rotated") { // generated with +3 degrees (counter-clockwise)
      EXPECT_NEAR(m.skew_degrees, 3.0, 0.3) << e.file;
    }
    ++seen;
  }
  EXPECT_EQ(seen, 12);
}

TEST(image_quality, preprocessing_removes_the_defect_it_was_called_for) {
  for (const char* file : {"inv01_en_classic_rotated.png", "inv01_en_classic_dark.png",
                           "inv01_en_classic_faint.png", "inv02_de_modern_noise.jpg"}) {
    auto img = load(file);
    auto before = measure_image(img);
    auto pre = preprocess_page(img, 200, before);
    ASSERT_FALSE(pre.image.empty());
    EXPECT_FALSE(pre.steps.empty()) << file;
    auto after = measure_image(pre.image);
    EXPECT_GT(image_score(after), image_score(before)) << file;
    auto encoded = png::from_gray(pre.image.data, pre.image.cols, pre.image.rows, pre.image.step);
    ASSERT_GT(encoded.size(), 8u);
    EXPECT_EQ(encoded.substr(1, 3), "PNG");
  }
}

TEST(image_quality, page_score_combines_image_and_ocr_confidence) {
  EXPECT_DOUBLE_EQ(page_score(1.0, 100), 1.0);
  EXPECT_DOUBLE_EQ(page_score(0.8, -1), 0.8);
  EXPECT_DOUBLE_EQ(page_score(0.6, 80), 0.7);
  EXPECT_DOUBLE_EQ(page_score(2.0, 400), 1.0);
  image_measures empty;
  EXPECT_GE(image_score(empty), 0.0);
  EXPECT_LE(image_score(empty), 1.0);
}
