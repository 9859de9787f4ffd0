// Page images: poppler-cpp renders PDF pages (ARGB32), Leptonica (adapters/ocr/png.hpp) encodes
// them as PNG and converts TIFF scans, which browsers do not show.
#include "review/page_images.hpp"

#include <algorithm>
#include <memory>

#include <poppler/cpp/poppler-document.h>
#include <poppler/cpp/poppler-global.h>
#include <poppler/cpp/poppler-image.h>
#include <poppler/cpp/poppler-page-renderer.h>
#include <poppler/cpp/poppler-page.h>

#include "adapters/ocr/png.hpp"
#include "messages/error_codes.hpp"

namespace ingestd {

namespace {

error out_of_range(int index, int count) {
  return error::make_permanent(errc::review_page_out_of_range,
                               "page " + std::to_string(index + 1) + " of a document with "
                                   + std::to_string(count) + " page(s)");
}

/// The largest TIFF page converted, as the OCR's default limit (ocr_options.hpp): a TIFF can
/// declare pages far larger than its bytes.
constexpr int64_t max_tiff_pixels = 60'000'000;

/// zlib's level (0-9) for the pages' PNG.
constexpr int png_compression = 3;

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
  auto encoded
      = png::from_bgra(reinterpret_cast<const uint8_t*>(img.const_data()), img.width(),
                       img.height(), static_cast<size_t>(img.bytes_per_row()), png_compression);
  if (encoded.empty())
    return error::make_permanent(errc::review_unreadable, "the page could not be encoded as PNG");
  return page_image{std::move(encoded), "image/png", count};
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
  auto encoded = png::from_tiff(bytes, max_tiff_pixels, errc::review_unreadable, png_compression);
  if (!encoded)
    return encoded.error();
  return page_image{std::move(*encoded), "image/png", 1};
}

} // namespace ingestd
