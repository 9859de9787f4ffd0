// The decoder helper's handlers (decoders.hpp).
#include "adapters/sandbox/decoders.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>

#include <leptonica/allheaders.h>

#include "adapters/containers/unpacker.hpp"
#include "adapters/ocr/document_source.hpp"
#include "adapters/ocr/page_work.hpp"
#include "adapters/ocr/tesseract_engine.hpp"
#include "adapters/sandbox/wire.hpp"
#include "review/page_images.hpp"

namespace ingestd::sandbox {

namespace {

using clock_type = std::chrono::steady_clock;

error bad_params(const error& e) {
  return error::make_permanent("decode.protocol", e.message);
}

/// OpenCV reports a failed allocation as an error of its own rather than std::bad_alloc.
int opencv_error(int status, const char*, const char*, const char*, int, void*) {
  if (status == cv::Error::StsNoMem)
    out_of_memory_exit();
  return 0; // the exception is thrown as usual
}

result<std::string> on_transcribe_page(request& req, clock_type::time_point deadline) {
  auto params = decode_page_request(req.params);
  if (!params)
    return bad_params(params.error());
  auto bytes = std::make_shared<const std::string>(std::move(req.bytes));
  auto page = open_and_transcribe_page(bytes, params->mime_type, params->index, params->options,
                                       deadline);
  if (!page)
    return page.error();
  return encode(page_answer{page->kind, page->page_count, std::move(page->outcome),
                            std::move(page->metadata)});
}

result<std::string> on_preprocess_page(request& req, clock_type::time_point) {
  auto params = decode_preprocess_request(req.params);
  if (!params)
    return bad_params(params.error());
  auto bytes = std::make_shared<const std::string>(std::move(req.bytes));
  return encode(preprocessed_page(bytes, params->mime_type, params->limits));
}

result<std::string> on_unpack(request& req, clock_type::time_point) {
  auto params = decode_unpack_params(req.params);
  if (!params)
    return bad_params(params.error());
  // libpst 0.6.76 keeps blocks it inflated (an .ost's 4 KiB pages): a helper that read an Outlook
  // data file serves no other document.
  if (params->kind == container_kind::pst)
    retire_after_this_request();
  auto out = unpacker_for(params->kind).unpack(req.bytes, params->kind, params->limits);
  if (!out)
    return out.error();
  return encode(*out);
}

result<std::string> on_render_page(request& req, clock_type::time_point) {
  auto params = decode_render_request(req.params);
  if (!params)
    return bad_params(params.error());
  auto image = ingestd::render_page(req.bytes, params->mime_type, params->index, params->dpi,
                                    params->max_width);
  if (!image)
    return image.error();
  return encode(*image);
}

result<std::string> on_count_pages(request& req, clock_type::time_point) {
  auto params = decode_preprocess_request(req.params);
  if (!params)
    return bad_params(params.error());
  auto n = ingestd::count_pages(req.bytes, params->mime_type, params->limits);
  if (!n)
    return n.error();
  wire_writer w;
  w.u32(static_cast<uint32_t>(std::max(*n, 0)));
  return w.take();
}

/// Leptonica's allocator for image data: it answers a failed allocation with no image, which the
/// readers above it call a file they cannot decode. Here it ends the helper as out of memory.
void* leptonica_image_data(size_t bytes) {
  void* p = std::malloc(bytes);
  if (p == nullptr && bytes > 0)
    out_of_memory_exit();
  return p;
}

void warm_up(const helper_settings& settings) {
  cv::redirectError(&opencv_error);
  setPixMemoryManager(&leptonica_image_data, &std::free);
  // Tesseract's language data, read now: after the sandbox it could still be read (read-only
  // opens are allowed), but a helper that cannot find it should fail before it is ready.
  cv::Mat blank(64, 64, CV_8UC1, cv::Scalar(255));
  auto far = clock_type::now() + std::chrono::minutes{1};
  auto ocr = run_tesseract(blank, 300, settings.tesseract, far);
  if (!ocr && ocr.error().code == "ocr.tesseract_init")
    std::fprintf(stderr, "decoder: %s\n", ocr.error().describe().c_str());
  // GMime's tables (g_mime_init).
  mime_unpacker mail;
  (void)mail;
}

} // namespace

handler_table decoder_handlers() {
  handler_table t;
  t.handlers[static_cast<uint8_t>(request_kind::transcribe_page)] = on_transcribe_page;
  t.handlers[static_cast<uint8_t>(request_kind::preprocess_page)] = on_preprocess_page;
  t.handlers[static_cast<uint8_t>(request_kind::unpack)] = on_unpack;
  t.handlers[static_cast<uint8_t>(request_kind::render_page)] = on_render_page;
  t.handlers[static_cast<uint8_t>(request_kind::count_pages)] = on_count_pages;
  t.warm_up = warm_up;
  return t;
}

int decoder_main(int argc, char** argv, int first, const std::map<uint8_t, handler>& extra) {
  auto settings = parse_helper_arguments(argc, argv, first);
  if (!settings) {
    std::fprintf(stderr, "ingestd decoder: %s\n", settings.error().describe().c_str());
    return 2;
  }
  auto table = decoder_handlers();
  for (auto& [kind, h] : extra)
    table.handlers[kind] = h;
  return helper_main(*settings, table);
}

} // namespace ingestd::sandbox
