// Page images: poppler-cpp renders PDF pages (ARGB32), OpenCV encodes them as PNG and converts
// TIFF scans, which browsers do not show.
#include "review/page_images.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <poppler/cpp/poppler-document.h>
#include <poppler/cpp/poppler-global.h>
#include <poppler/cpp/poppler-image.h>
#include <poppler/cpp/poppler-page-renderer.h>
#include <poppler/cpp/poppler-page.h>

#include "messages/error_codes.hpp"

namespace ingestd {

namespace {

error out_of_range(int index, int count) {
  return error::make_permanent(errc::review_page_out_of_range,
                               "page " + std::to_string(index + 1) + " of a document with "
                                   + std::to_string(count) + " page(s)");
}

result<std::string> encode_png(const cv::Mat& image) {
  std::vector<unsigned char> out;
  try {
    if (!cv::imencode(".png", image, out, {cv::IMWRITE_PNG_COMPRESSION, 3}))
      return error::make_permanent(errc::review_unreadable, "the page could not be encoded as PNG");
  } catch (const cv::Exception& e) {
    return error::make_permanent(errc::review_unreadable,
                                 std::string{"PNG encoding failed: "} + e.what());
  }
  return std::string{out.begin(), out.end()};
}

result<page_image> render_pdf(const std::string& bytes, int index, int dpi, int max_width) {
  std::unique_ptr<poppler::document> doc{
      poppler::document::load_from_raw_data(bytes.data(), static_cast<int>(bytes.size()))};
  if (!doc)
    return error::make_permanent(errc::review_unreadable, "poppler cannot open the PDF");
  if (doc->is_locked())
    return error::make_permanent(errc::review_unreadable, "the PDF is encrypted");
  int count = doc->pages();
  if (index < 0 || index >= count)
    return out_of_range(index, count);
  std::unique_ptr<poppler::page> page{doc->create_page(index)};
  if (!page)
    return error::make_permanent(errc::review_unreadable, "poppler cannot read the page");
  // Points are 1/72 inch: keep the width within max_width.
  double width_points = std::max(1.0, page->page_rect().width());
  double scale = std::min(static_cast<double>(dpi), max_width * 72.0 / width_points);
  poppler::page_renderer renderer;
  renderer.set_render_hint(poppler::page_renderer::antialiasing, true);
  renderer.set_render_hint(poppler::page_renderer::text_antialiasing, true);
  renderer.set_image_format(poppler::image::format_argb32);
  auto img = renderer.render_page(page.get(), scale, scale);
  if (!img.is_valid())
    return error::make_permanent(errc::review_unreadable, "poppler could not render the page");
  // ARGB32 in native byte order is B, G, R, A in memory on little-endian machines: OpenCV's BGRA.
  cv::Mat argb{img.height(), img.width(), CV_8UC4, img.data(),
               static_cast<size_t>(img.bytes_per_row())};
  auto png = encode_png(argb);
  if (!png)
    return png.error();
  return page_image{std::move(*png), "image/png", count};
}

} // namespace

result<page_image> render_page(const std::string& bytes, std::string_view mime_type, int index,
                               int dpi, int max_width) {
  if (mime_type == "application/pdf")
    return render_pdf(bytes, index, dpi, max_width);
  if (mime_type != "image/png" && mime_type != "image/jpeg" && mime_type != "image/tiff")
    return error::make_permanent(errc::review_unsupported_type,
                                 "no page image for type '" + std::string{mime_type} + "'");
  if (index != 0)
    return out_of_range(index, 1);
  // Browsers show PNG and JPEG as they are.
  if (mime_type != "image/tiff")
    return page_image{bytes, std::string{mime_type}, 1};
  cv::Mat decoded;
  try {
    std::vector<unsigned char> raw{bytes.begin(), bytes.end()};
    decoded = cv::imdecode(raw, cv::IMREAD_COLOR);
  } catch (const cv::Exception& e) {
    return error::make_permanent(errc::review_unreadable,
                                 std::string{"the TIFF cannot be read: "} + e.what());
  }
  if (decoded.empty())
    return error::make_permanent(errc::review_unreadable, "the TIFF cannot be read");
  auto png = encode_png(decoded);
  if (!png)
    return png.error();
  return page_image{std::move(*png), "image/png", 1};
}

} // namespace ingestd
