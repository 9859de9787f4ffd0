#include "adapters/ocr/png.hpp"

#include <memory>

#include <leptonica/allheaders.h>

namespace ingestd::png {

namespace {

struct pix_free {
  void operator()(PIX* p) const { pixDestroy(&p); }
};
using pix_ptr = std::unique_ptr<PIX, pix_free>;

/// Leptonica reports a file it cannot read on stderr too; the callers' errors say it instead.
void silence_leptonica() {
  static const bool silenced = [] {
    setMsgSeverity(L_SEVERITY_NONE);
    return true;
  }();
  (void)silenced;
}

std::string encode(PIX* pix, int compression) {
  pixSetZlibCompression(pix, compression);
  l_uint8* data = nullptr;
  size_t size = 0;
  if (pixWriteMemPng(&data, &size, pix, 0.0f) != 0 || data == nullptr)
    return {};
  std::string out{reinterpret_cast<const char*>(data), size};
  lept_free(data);
  return out;
}

} // namespace

std::string from_gray(const uint8_t* pixels, int width, int height, size_t stride,
                      int compression) {
  if (width <= 0 || height <= 0)
    return {};
  pix_ptr pix{pixCreateNoInit(width, height, 8)};
  if (!pix)
    return {};
  l_uint32* data = pixGetData(pix.get());
  auto wpl = pixGetWpl(pix.get());
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = pixels + static_cast<size_t>(y) * stride;
    l_uint32* line = data + static_cast<ptrdiff_t>(y) * wpl;
    for (int x = 0; x < width; ++x)
      SET_DATA_BYTE(line, x, row[x]);
  }
  return encode(pix.get(), compression);
}

std::string from_bgra(const uint8_t* pixels, int width, int height, size_t stride,
                      int compression) {
  if (width <= 0 || height <= 0)
    return {};
  pix_ptr pix{pixCreateNoInit(width, height, 32)};
  if (!pix)
    return {};
  pixSetSpp(pix.get(), 3);
  l_uint32* data = pixGetData(pix.get());
  auto wpl = pixGetWpl(pix.get());
  for (int y = 0; y < height; ++y) {
    const uint8_t* p = pixels + static_cast<size_t>(y) * stride;
    l_uint32* line = data + static_cast<ptrdiff_t>(y) * wpl;
    for (int x = 0; x < width; ++x, p += 4)
      line[x] = (l_uint32{p[2]} << L_RED_SHIFT) | (l_uint32{p[1]} << L_GREEN_SHIFT)
                | (l_uint32{p[0]} << L_BLUE_SHIFT) | 0xffu;
  }
  return encode(pix.get(), compression);
}

result<std::string> from_tiff(const std::string& bytes, int64_t max_pixels, std::string_view code,
                              int compression) {
  auto unreadable
      = [&](std::string what) { return error::make_permanent(std::string{code}, std::move(what)); };
  silence_leptonica();
  auto data = reinterpret_cast<const l_uint8*>(bytes.data());
  l_int32 format = 0, w = 0, h = 0, bps = 0, spp = 0, cmap = 0;
  if (bytes.empty()
      || pixReadHeaderMem(data, bytes.size(), &format, &w, &h, &bps, &spp, &cmap) != 0)
    return unreadable("the TIFF cannot be read");
  if (int64_t{w} * h > max_pixels)
    return unreadable("the TIFF's page has " + std::to_string(int64_t{w} * h)
                      + " pixels; the limit is " + std::to_string(max_pixels));
  pix_ptr pix{pixReadMemTiff(data, bytes.size(), 0)};
  if (!pix)
    return unreadable("the TIFF cannot be read");
  auto out = encode(pix.get(), compression);
  if (out.empty())
    return unreadable("the page could not be encoded as PNG");
  return out;
}

} // namespace ingestd::png
