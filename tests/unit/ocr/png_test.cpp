// adapters/ocr/png: what Leptonica writes, OpenCV's own PNG reader reads back pixel for pixel.

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>

#include "adapters/ocr/png.hpp"
#include "tests/support/ocr/ocr_support.hpp"

using namespace ingestd;

namespace {

cv::Mat decode(const std::string& encoded) {
  std::vector<uint8_t> raw{encoded.begin(), encoded.end()};
  return cv::imdecode(raw, cv::IMREAD_UNCHANGED);
}

} // namespace

TEST(png, grey_pixels_with_a_row_stride_come_back_as_they_were) {
  const int w = 37, h = 23;
  const size_t stride = 40;
  std::vector<uint8_t> pixels(stride * h, 0xEE); // the padding must not show
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      pixels[static_cast<size_t>(y) * stride + static_cast<size_t>(x)]
          = static_cast<uint8_t>((x * 7 + y * 11) % 256);
  for (int level : {0, 1, 9}) {
    auto encoded = png::from_gray(pixels.data(), w, h, stride, level);
    ASSERT_EQ(encoded.substr(0, 4), "\x89PNG");
    auto back = decode(encoded);
    ASSERT_EQ(back.type(), CV_8UC1);
    ASSERT_EQ(back.cols, w);
    ASSERT_EQ(back.rows, h);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        ASSERT_EQ(back.at<uint8_t>(y, x),
                  pixels[static_cast<size_t>(y) * stride + static_cast<size_t>(x)])
            << x << "," << y << " at level " << level;
  }
}

TEST(png, bgra_pixels_become_rgb_without_the_alpha) {
  const int w = 5, h = 3;
  const size_t stride = w * 4 + 8;
  std::vector<uint8_t> pixels(stride * h, 0);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      auto* p = &pixels[static_cast<size_t>(y) * stride + static_cast<size_t>(x) * 4];
      p[0] = static_cast<uint8_t>(10 * x);      // B
      p[1] = static_cast<uint8_t>(50 + 20 * y); // G
      p[2] = static_cast<uint8_t>(200 - x - y); // R
      p[3] = static_cast<uint8_t>(x * 60);      // A, not written
    }
  auto back = decode(png::from_bgra(pixels.data(), w, h, stride));
  ASSERT_EQ(back.type(), CV_8UC3); // OpenCV reads RGB as B, G, R
  ASSERT_EQ(back.cols, w);
  ASSERT_EQ(back.rows, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      auto px = back.at<cv::Vec3b>(y, x);
      const auto* p = &pixels[static_cast<size_t>(y) * stride + static_cast<size_t>(x) * 4];
      EXPECT_EQ(px[0], p[0]);
      EXPECT_EQ(px[1], p[1]);
      EXPECT_EQ(px[2], p[2]);
    }
}

TEST(png, nothing_to_encode_is_empty) {
  uint8_t one = 0;
  EXPECT_TRUE(png::from_gray(&one, 0, 1, 1).empty());
  EXPECT_TRUE(png::from_bgra(&one, 1, 0, 4).empty());
}

TEST(png, a_tiff_page_converts_and_a_damaged_or_oversized_one_is_a_named_error) {
  std::ifstream in{test::corpus_dir() + "/inv03_en_compact_scan.tiff", std::ios::binary};
  std::stringstream bytes;
  bytes << in.rdbuf();
  auto tiff = bytes.str();
  ASSERT_FALSE(tiff.empty());
  auto converted = png::from_tiff(tiff, 60'000'000, "test.unreadable");
  ASSERT_TRUE(converted) << converted.error().describe();
  auto back = decode(*converted);
  auto original
      = cv::imread(test::corpus_dir() + "/inv03_en_compact_scan.tiff", cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(back.empty());
  EXPECT_EQ(back.cols, original.cols);
  EXPECT_EQ(back.rows, original.rows);

  auto small = png::from_tiff(tiff, 1000, "test.unreadable");
  ASSERT_FALSE(small);
  EXPECT_EQ(small.error().code, "test.unreadable");
  EXPECT_TRUE(small.error().permanent());
  EXPECT_NE(small.error().message.find("the limit is 1000"), std::string::npos);

  for (const std::string& damaged :
       {std::string{}, std::string{"II*\0garbage", 11}, tiff.substr(0, 64)}) {
    auto r = png::from_tiff(damaged, 60'000'000, "test.unreadable");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, "test.unreadable");
  }
}
