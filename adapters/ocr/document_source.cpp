// PDFs through poppler-cpp (text layer or 300 dpi render), images through Leptonica (PNG, JPEG,
// TIFF with all its pages). Library diagnostics are silenced: errors come back as values.

#include "adapters/ocr/document_source.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <utility>
#include <vector>

#include <leptonica/allheaders.h>
#include <poppler/cpp/poppler-document.h>
#include <poppler/cpp/poppler-global.h>
#include <poppler/cpp/poppler-page-renderer.h>
#include <poppler/cpp/poppler-page.h>

#include "messages/text.hpp"

namespace ingestd {

namespace {

void quiet_poppler(const std::string&, void*) {}

void silence_libraries() {
  static std::once_flag once;
  std::call_once(once, [] {
    poppler::set_debug_error_function(&quiet_poppler, nullptr);
    setMsgSeverity(L_SEVERITY_NONE);
  });
}

error corrupt(std::string what) {
  return error::make_permanent("ocr.corrupt_file", std::move(what));
}

/// An office document reaches the readers only as the PDF it was converted to.
error not_converted(const file_type& type) {
  return error::make_permanent("ocr.unsupported_type",
                               "a " + std::string{type.ext}
                                   + " document is read through its conversion to PDF, which "
                                     "this reader was not given");
}

struct pix_deleter {
  void operator()(PIX* p) const { pixDestroy(&p); }
};
using pix_ptr = std::unique_ptr<PIX, pix_deleter>;

/// Any Leptonica image as an 8-bit grey cv::Mat (copy).
cv::Mat to_gray_mat(PIX* pix) {
  pix_ptr g{pixConvertTo8(pix, 0)};
  if (!g)
    return {};
  int w = static_cast<int>(pixGetWidth(g.get())), h = static_cast<int>(pixGetHeight(g.get()));
  int wpl = pixGetWpl(g.get());
  l_uint32* data = pixGetData(g.get());
  cv::Mat out(h, w, CV_8UC1);
  for (int y = 0; y < h; ++y) {
    const l_uint32* line = data + static_cast<ptrdiff_t>(y) * wpl;
    auto* dst = out.ptr<uint8_t>(y);
    for (int x = 0; x < w; ++x)
      dst[x] = static_cast<uint8_t>(l_getDataByte(line, x));
  }
  return out;
}

int dpi_of(PIX* pix) {
  int r = pixGetXRes(pix);
  return (r >= 50 && r <= 2400) ? r : 300;
}

/// The words of a page's text layer with their boxes as fractions of the page. poppler gives them
/// in points from the top left of the crop box, the page's own rotation applied, as its
/// renderer (the desk's page images) draws the page.
std::vector<page_word> text_boxes(poppler::page& p) {
  std::vector<page_word> out;
  auto rect = p.page_rect(poppler::crop_box);
  double w = rect.width(), h = rect.height();
  auto turn = p.orientation();
  if (turn == poppler::page::landscape || turn == poppler::page::seascape)
    std::swap(w, h);
  if (!(w > 0 && h > 0))
    return out;
  auto part = [](double v) { return static_cast<float>(std::clamp(v, 0.0, 1.0)); };
  for (auto& box : p.text_list()) {
    if (out.size() >= max_page_words)
      break;
    auto bytes = box.text().to_utf8();
    auto text = clean_text(std::string_view{bytes.data(), bytes.size()});
    if (text.empty() || text.size() > max_word_bytes
        || std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); }))
      continue;
    auto b = box.bbox();
    out.push_back(page_word{std::move(text), part(b.left() / w), part(b.top() / h),
                            part(b.right() / w), part(b.bottom() / h)});
  }
  return out;
}

std::string clean_native_text(const std::string& raw) {
  // The physical layout keeps columns of one row on one line; collapse its padding so rows read
  // "label value" and drop blank runs.
  std::string out;
  std::string line;
  size_t i = 0;
  int blank_run = 0;
  auto flush = [&] {
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    if (line.empty()) {
      if (++blank_run == 1 && !out.empty())
        out += '\n';
    } else {
      blank_run = 0;
      out += line;
      out += '\n';
    }
    line.clear();
  };
  for (; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '\n' || c == '\f') {
      flush();
    } else if (c == '\r') {
    } else if (c == ' ' || c == '\t') {
      if (!line.empty() && line.back() != ' ')
        line += ' ';
    } else {
      line += c;
    }
  }
  flush();
  while (!out.empty() && (out.back() == '\n'))
    out.pop_back();
  return out;
}

class pdf_source final : public document_source {
public:
  pdf_source(std::unique_ptr<poppler::document> doc, const document_limits& limits)
      : doc_(std::move(doc)), limits_(limits), pages_(doc_->pages()) {}

  int page_count() const override { return pages_; }
  file_kind kind() const override { return file_kind::pdf; }

  result<page_content> page(int index) override {
    // poppler's document is not safe for concurrent use: one page at a time per document.
    std::lock_guard<std::mutex> guard{mtx_};
    std::unique_ptr<poppler::page> p{doc_->create_page(index)};
    if (!p)
      return corrupt("PDF page " + std::to_string(index + 1) + " cannot be read");
    page_content out;
    auto bytes = p->text(poppler::rectf(), poppler::page::physical_layout).to_utf8();
    std::string raw(bytes.begin(), bytes.end());
    auto non_space
        = std::count_if(raw.begin(), raw.end(), [](unsigned char c) { return !std::isspace(c); });
    if (non_space >= limits_.min_native_chars) {
      out.native = true;
      out.text = clean_native_text(raw);
      out.words = text_boxes(*p);
      return out;
    }
    auto box = p->page_rect(poppler::media_box);
    double w_in = box.width() / 72.0, h_in = box.height() / 72.0;
    if (!(w_in > 0 && h_in > 0))
      return corrupt("PDF page " + std::to_string(index + 1) + " has no size");
    double dpi = limits_.render_dpi;
    double px = w_in * h_in * dpi * dpi;
    if (px > static_cast<double>(limits_.max_page_pixels))
      dpi = std::floor(std::sqrt(static_cast<double>(limits_.max_page_pixels) / (w_in * h_in)));
    if (dpi < 50)
      return error::make_permanent("ocr.too_large", "PDF page " + std::to_string(index + 1)
                                                        + " is too large to render");
    poppler::page_renderer renderer;
    renderer.set_render_hint(poppler::page_renderer::antialiasing, true);
    renderer.set_render_hint(poppler::page_renderer::text_antialiasing, true);
    renderer.set_image_format(poppler::image::format_gray8);
    poppler::image img = renderer.render_page(p.get(), dpi, dpi);
    if (!img.is_valid() || img.width() <= 0 || img.height() <= 0)
      return corrupt("PDF page " + std::to_string(index + 1) + " cannot be rendered");
    cv::Mat view(img.height(), img.width(), CV_8UC1, const_cast<char*>(img.const_data()),
                 static_cast<size_t>(img.bytes_per_row()));
    out.gray = view.clone();
    out.dpi = static_cast<int>(dpi);
    return out;
  }

  document_metadata metadata() const override {
    std::lock_guard<std::mutex> guard{mtx_};
    document_metadata out;
    auto keep = [&](const char* name, const std::string& value) {
      auto clean = clean_text(value);
      auto first = clean.find_first_not_of(" \t\r\n");
      if (first == std::string::npos)
        return;
      out.emplace_back(name,
                       std::string{utf8_prefix(clean.substr(first), max_metadata_value_bytes)});
    };
    for (auto [name, key] : {std::pair{"title", "Title"},
                             {"author", "Author"},
                             {"subject", "Subject"},
                             {"keywords", "Keywords"},
                             {"creator", "Creator"},
                             {"producer", "Producer"}}) {
      auto bytes = doc_->info_key(key).to_utf8();
      keep(name, std::string(bytes.begin(), bytes.end()));
    }
    for (auto [name, key] : {std::pair{"created", "CreationDate"}, {"modified", "ModDate"}}) {
      auto t = doc_->info_date_t(key);
      std::tm utc{};
      char text[32];
      if (t > 0 && ::gmtime_r(&t, &utc) != nullptr
          && std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc) > 0)
        keep(name, text);
    }
    return out;
  }

  result<std::string> text_layer(int index) override {
    std::lock_guard<std::mutex> guard{mtx_};
    std::unique_ptr<poppler::page> p{doc_->create_page(index)};
    if (!p)
      return corrupt("PDF page " + std::to_string(index + 1) + " cannot be read");
    auto bytes = p->text(poppler::rectf(), poppler::page::physical_layout).to_utf8();
    return clean_native_text(std::string(bytes.begin(), bytes.end()));
  }

private:
  std::unique_ptr<poppler::document> doc_;
  document_limits limits_;
  int pages_;
  mutable std::mutex mtx_;
};

/// Images decoded at open time (a TIFF's pages are decoded one by one to honour the limits).
class image_source final : public document_source {
public:
  image_source(file_kind kind, std::vector<page_content> pages)
      : kind_(kind), pages_(std::move(pages)) {}
  int page_count() const override { return static_cast<int>(pages_.size()); }
  file_kind kind() const override { return kind_; }
  result<page_content> page(int index) override {
    // Each page is handed out once; moving it out keeps memory flat on long TIFFs.
    std::lock_guard<std::mutex> guard{mtx_};
    if (index < 0 || static_cast<size_t>(index) >= pages_.size()
        || pages_[static_cast<size_t>(index)].gray.empty())
      return corrupt("image page " + std::to_string(index + 1) + " was not decoded");
    page_content out = pages_.at(static_cast<size_t>(index));
    pages_[static_cast<size_t>(index)].gray.release();
    return out;
  }

private:
  file_kind kind_;
  std::vector<page_content> pages_;
  std::mutex mtx_;
};

result<page_content> decode_pix(pix_ptr pix, const document_limits& limits, int number) {
  if (!pix)
    return corrupt("image page " + std::to_string(number) + " cannot be decoded");
  int64_t px = int64_t{pixGetWidth(pix.get())} * pixGetHeight(pix.get());
  if (px > limits.max_page_pixels)
    return error::make_permanent("ocr.too_large", "image page " + std::to_string(number) + " has "
                                                      + std::to_string(px) + " pixels");
  page_content out;
  out.dpi = dpi_of(pix.get());
  out.gray = to_gray_mat(pix.get());
  if (out.gray.empty())
    return corrupt("image page " + std::to_string(number) + " has an unsupported pixel format");
  return out;
}

} // namespace

result<std::shared_ptr<document_source>>
open_document(const std::shared_ptr<const std::string>& bytes, std::string_view mime_type,
              const document_limits& limits, std::optional<int> only_page) {
  silence_libraries();
  const std::string& b = *bytes;
  if (b.empty())
    return error::make_permanent("ocr.empty_file", "the document is empty (0 bytes)");
  if (b.size() > limits.max_file_bytes)
    return error::make_permanent("ocr.too_large", "the document has " + std::to_string(b.size())
                                                      + " bytes; the limit is "
                                                      + std::to_string(limits.max_file_bytes));
  auto type = detect_file_type(b);
  if (!type) {
    // A declared type we support but bytes that are none of them: damaged, not unsupported.
    if (file_type_of_mime(mime_type))
      return corrupt("declared " + std::string{mime_type} + " but the bytes are not one");
    return error::make_permanent("ocr.unsupported_type",
                                 "unsupported document type \"" + std::string{mime_type}
                                     + "\" (PDF, PNG, JPEG and TIFF are supported)");
  }
  auto kind = type->kind;
  if (needs_conversion(kind))
    return not_converted(*type);
  if (kind == file_kind::pdf) {
    if (b.size() > static_cast<size_t>(INT32_MAX))
      return error::make_permanent("ocr.too_large", "PDF too large for poppler");
    std::unique_ptr<poppler::document> doc{
        poppler::document::load_from_raw_data(b.data(), static_cast<int>(b.size()))};
    if (!doc)
      return corrupt("the PDF cannot be parsed (damaged or truncated)");
    if (doc->is_locked())
      return error::make_permanent("ocr.encrypted_pdf", "the PDF is password-protected");
    int n = doc->pages();
    if (n <= 0)
      return corrupt("the PDF has no pages (damaged or truncated)");
    if (n > limits.max_pages)
      return error::make_permanent("ocr.too_many_pages", "the PDF has " + std::to_string(n)
                                                             + " pages; the limit is "
                                                             + std::to_string(limits.max_pages));
    return std::shared_ptr<document_source>{std::make_shared<pdf_source>(std::move(doc), limits)};
  }
  auto data = reinterpret_cast<const l_uint8*>(b.data());
  l_int32 format = 0, w = 0, h = 0, bps = 0, spp = 0, cmap = 0;
  if (pixReadHeaderMem(data, b.size(), &format, &w, &h, &bps, &spp, &cmap) != 0)
    return corrupt("the " + std::string{type->mime} + " header cannot be read");
  if (int64_t{w} * h > limits.max_page_pixels)
    return error::make_permanent("ocr.too_large",
                                 "the image has " + std::to_string(int64_t{w} * h) + " pixels");
  std::vector<page_content> pages;
  if (kind == file_kind::tiff && only_page) {
    // Count the pages from their directories, decode the one asked for.
    l_int32 count = 0;
    FILE* f = fmemopen(const_cast<l_uint8*>(data), b.size(), "rb");
    if (!f)
      return corrupt("the TIFF cannot be read");
    auto counted = tiffGetCount(f, &count);
    std::fclose(f);
    if (counted != 0 || count <= 0)
      return corrupt("the TIFF's pages cannot be counted");
    if (count > limits.max_pages)
      return error::make_permanent("ocr.too_many_pages", "the TIFF has more than "
                                                             + std::to_string(limits.max_pages)
                                                             + " pages");
    if (*only_page < 0 || *only_page >= count)
      return corrupt("the TIFF has no page " + std::to_string(*only_page + 1));
    pages.resize(static_cast<size_t>(count));
    auto page
        = decode_pix(pix_ptr{pixReadMemTiff(data, b.size(), *only_page)}, limits, *only_page + 1);
    if (!page)
      return page.error();
    pages[static_cast<size_t>(*only_page)] = std::move(*page);
  } else if (kind == file_kind::tiff) {
    size_t offset = 0;
    do {
      if (static_cast<int>(pages.size()) >= limits.max_pages)
        return error::make_permanent("ocr.too_many_pages", "the TIFF has more than "
                                                               + std::to_string(limits.max_pages)
                                                               + " pages");
      size_t before = offset;
      pix_ptr pix{pixReadMemFromMultipageTiff(data, b.size(), &offset)};
      auto page = decode_pix(std::move(pix), limits, static_cast<int>(pages.size()) + 1);
      if (!page)
        return page.error();
      pages.push_back(std::move(*page));
      if (offset != 0 && offset <= before)
        return corrupt("the TIFF's page chain loops");
    } while (offset != 0);
  } else {
    auto page = decode_pix(pix_ptr{pixReadMem(data, b.size())}, limits, 1);
    if (!page)
      return page.error();
    pages.push_back(std::move(*page));
  }
  return std::shared_ptr<document_source>{std::make_shared<image_source>(kind, std::move(pages))};
}

result<int> count_pages(const std::string& bytes, std::string_view mime_type,
                        const document_limits& limits) {
  silence_libraries();
  if (bytes.empty())
    return error::make_permanent("ocr.empty_file", "the document is empty (0 bytes)");
  if (bytes.size() > limits.max_file_bytes || bytes.size() > static_cast<size_t>(INT32_MAX))
    return error::make_permanent("ocr.too_large", "the document is too large");
  auto type = detect_file_type(bytes);
  if (!type)
    return error::make_permanent("ocr.unsupported_type",
                                 "unsupported document type \"" + std::string{mime_type} + "\"");
  if (needs_conversion(type->kind))
    return not_converted(*type);
  if (type->kind == file_kind::pdf) {
    std::unique_ptr<poppler::document> doc{
        poppler::document::load_from_raw_data(bytes.data(), static_cast<int>(bytes.size()))};
    if (!doc)
      return corrupt("the PDF cannot be parsed (damaged or truncated)");
    if (doc->is_locked())
      return error::make_permanent("ocr.encrypted_pdf", "the PDF is password-protected");
    return doc->pages();
  }
  if (type->kind != file_kind::tiff)
    return 1;
  l_int32 count = 0;
  FILE* f = fmemopen(const_cast<char*>(bytes.data()), bytes.size(), "rb");
  if (!f)
    return corrupt("the TIFF cannot be read");
  auto counted = tiffGetCount(f, &count);
  std::fclose(f);
  if (counted != 0 || count <= 0)
    return corrupt("the TIFF's pages cannot be counted");
  return static_cast<int>(count);
}

} // namespace ingestd
