// The typed calls to a decoder, and the checks of what a helper answers.
#include "adapters/sandbox/decoder.hpp"

#include <algorithm>

#include "adapters/sandbox/wire.hpp"
#include "messages/error_codes.hpp"

namespace ingestd::sandbox {

namespace {

/// An answer that breaks the request's bounds: the helper is not behaving, so the document is
/// treated as one that crashed it.
error bad_answer(const std::string& what) {
  return error::make_transient(errc::decode_crashed, "the decoder helper answered " + what);
}

template <class T, class Decode>
result<T> typed_call(decoder& d, request_kind kind, const std::string& params,
                     std::string_view bytes, clock_type::time_point deadline, Decode decode,
                     std::stop_token stop = {}) {
  auto body = d.call(request_view{static_cast<uint8_t>(kind), timeout_ms(deadline), params, bytes},
                     deadline, std::move(stop));
  if (!body)
    return body.error();
  auto value = decode(*body);
  if (!value)
    return bad_answer(value.error().message);
  return std::move(*value);
}

} // namespace

uint32_t timeout_ms(clock_type::time_point deadline) {
  auto left
      = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
  return static_cast<uint32_t>(std::clamp<int64_t>(left, 1, UINT32_MAX));
}

result<page_answer> transcribe_page(decoder& d, std::string_view bytes, std::string_view mime_type,
                                    int index, const page_options& options,
                                    clock_type::time_point deadline) {
  auto params = encode(page_request{std::string{mime_type}, index, options});
  auto a = typed_call<page_answer>(d, request_kind::transcribe_page, params, bytes, deadline,
                                   decode_page_answer);
  if (!a)
    return a;
  if (a->page_count < 1 || a->page_count > options.limits.max_pages || index >= a->page_count)
    return bad_answer("a page count of " + std::to_string(a->page_count));
  auto& image = a->outcome.image;
  if (!image.empty()
      && static_cast<int64_t>(image.pixels.size()) > options.limits.max_page_pixels * 4)
    return bad_answer("an image larger than the page limit");
  a->outcome.page.number = index + 1;
  return a;
}

result<gray_pixels> preprocess_page(decoder& d, std::string_view bytes, std::string_view mime_type,
                                    const document_limits& limits,
                                    clock_type::time_point deadline) {
  auto params = encode(preprocess_request{std::string{mime_type}, limits});
  auto a = typed_call<gray_pixels>(d, request_kind::preprocess_page, params, bytes, deadline,
                                   decode_gray_pixels);
  if (a && static_cast<int64_t>(a->pixels.size()) > limits.max_page_pixels * 4)
    return bad_answer("an image larger than the page limit");
  return a;
}

result<unpacked> unpack(decoder& d, std::string_view bytes, container_kind kind,
                        const unpack_limits& limits, clock_type::time_point deadline,
                        std::stop_token stop) {
  auto params = encode(unpack_params{kind, limits});
  auto a = typed_call<unpacked>(d, request_kind::unpack, params, bytes, deadline, decode_unpacked,
                                std::move(stop));
  if (!a)
    return a;
  if (a->members.size() > static_cast<size_t>(std::max(limits.max_members, 0)))
    return bad_answer(std::to_string(a->members.size()) + " members");
  uint64_t total = 0;
  for (auto& m : a->members) {
    if (m.bytes.size() > limits.max_member_bytes)
      return bad_answer("a member over the member limit");
    total += m.bytes.size();
  }
  if (total > limits.max_total_bytes)
    return bad_answer("members over the total limit");
  return a;
}

result<int> count_pages(decoder& d, std::string_view bytes, std::string_view mime_type,
                        const document_limits& limits, clock_type::time_point deadline) {
  auto params = encode(preprocess_request{std::string{mime_type}, limits});
  return typed_call<int>(d, request_kind::count_pages, params, bytes, deadline,
                         [](std::string_view body) -> result<int> {
                           wire_reader r{body};
                           auto n = r.u32();
                           if (!r.done() || n > static_cast<uint32_t>(INT32_MAX))
                             return error::make_permanent("decode.protocol", "malformed count");
                           return static_cast<int>(n);
                         });
}

result<page_image> render_page(decoder& d, std::string_view bytes, std::string_view mime_type,
                               int index, int dpi, int max_width, size_t max_bytes,
                               clock_type::time_point deadline) {
  auto params = encode(render_request{std::string{mime_type}, index, dpi, max_width});
  auto a = typed_call<page_image>(d, request_kind::render_page, params, bytes, deadline,
                                  decode_page_image);
  if (!a)
    return a;
  if (a->content_type != "image/png" && a->content_type != "image/jpeg")
    return bad_answer("a page image of type " + a->content_type.substr(0, 40));
  if (a->bytes.size() > max_bytes)
    return bad_answer("a page image over the size limit");
  return a;
}

} // namespace ingestd::sandbox
