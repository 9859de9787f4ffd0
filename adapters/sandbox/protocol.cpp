// The decoder protocol's encoding and its frames on pipes.
#include "adapters/sandbox/protocol.hpp"

#include <cerrno>
#include <poll.h>
#include <unistd.h>

#include "adapters/sandbox/wire.hpp"
#include "messages/text.hpp"

namespace ingestd::sandbox {

namespace {

using clock_type = std::chrono::steady_clock;

error protocol_error(std::string what) {
  return error::make_permanent("decode.protocol", std::move(what));
}

/// Counts of lists inside answers: far above what any limit allows, low enough that a hostile
/// count cannot make a reader loop long.
constexpr uint32_t max_list = 1u << 20;

// -- small encoders of shared parts ------------------------------------------------------------

void put(wire_writer& w, const tesseract_settings& t) {
  w.str(t.languages);
  w.str(t.other_languages);
  w.str(t.tessdata_path);
  w.i32(t.page_segmentation_mode);
}

void get(wire_reader& r, tesseract_settings& t) {
  t.languages = r.str();
  t.other_languages = r.str();
  t.tessdata_path = r.str();
  t.page_segmentation_mode = r.i32();
}

void put(wire_writer& w, const document_limits& l) {
  w.u64(l.max_file_bytes);
  w.i32(l.max_pages);
  w.i64(l.max_page_pixels);
  w.i32(l.render_dpi);
  w.i32(l.min_native_chars);
}

void get(wire_reader& r, document_limits& l) {
  l.max_file_bytes = static_cast<size_t>(r.u64());
  l.max_pages = r.i32();
  l.max_page_pixels = r.i64();
  l.render_dpi = r.i32();
  l.min_native_chars = r.i32();
}

void put(wire_writer& w, const gray_pixels& g) {
  w.i32(g.width);
  w.i32(g.height);
  w.str(g.pixels);
}

void get(wire_reader& r, gray_pixels& g) {
  g.width = r.i32();
  g.height = r.i32();
  g.pixels = r.str();
  if (!g.pixels.empty() && !g.valid())
    r.fail();
}

template <class T>
result<T> finished(wire_reader& r, T value, const char* what) {
  if (!r.done())
    return protocol_error(std::string{"malformed "} + what);
  return value;
}

/// A poll on one descriptor until the deadline: true when it is ready (or has hung up).
io_status wait_for(int fd, short events, const io_deadline& deadline) {
  for (;;) {
    int timeout = -1;
    if (deadline) {
      auto left
          = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - clock_type::now());
      if (left.count() <= 0)
        return io_status::timeout;
      timeout = static_cast<int>(std::min<int64_t>(left.count() + 1, 60'000));
    }
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, timeout);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return io_status::failed;
    }
    if (n > 0)
      return io_status::ok; // readable, writable, or hung up: the next read or write says which
  }
}

io_status write_all(int fd, const char* data, size_t size, const io_deadline& deadline) {
  while (size > 0) {
    auto n = ::write(fd, data, size);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (auto s = wait_for(fd, POLLOUT, deadline); s != io_status::ok)
        return s;
      continue;
    }
    if (n < 0 && errno == EPIPE)
      return io_status::closed;
    return io_status::failed;
  }
  return io_status::ok;
}

io_status read_all(int fd, char* data, size_t size, const io_deadline& deadline) {
  while (size > 0) {
    auto n = ::read(fd, data, size);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0)
      return io_status::closed;
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (auto s = wait_for(fd, POLLIN, deadline); s != io_status::ok)
        return s;
      continue;
    }
    return io_status::failed;
  }
  return io_status::ok;
}

} // namespace

std::string_view to_string(request_kind kind) {
  switch (kind) {
  case request_kind::transcribe_page:
    return "transcribe_page";
  case request_kind::preprocess_page:
    return "preprocess_page";
  case request_kind::unpack:
    return "unpack";
  case request_kind::render_page:
    return "render_page";
  case request_kind::count_pages:
    return "count_pages";
  }
  return "unknown";
}

// -- envelopes ---------------------------------------------------------------------------------

std::string encode_request(const request& req) {
  return encode_request(request_view{req.kind, req.timeout_ms, req.params, req.bytes});
}

std::string encode_request(const request_view& req) {
  wire_writer w;
  w.data().reserve(10 + req.params.size() + req.bytes.size());
  w.u8(protocol_version);
  w.u8(req.kind);
  w.u32(req.timeout_ms);
  w.str(req.params);
  w.raw(req.bytes);
  return w.take();
}

result<request> decode_request(std::string_view payload) {
  wire_reader r{payload};
  if (r.u8() != protocol_version || r.failed())
    return protocol_error("a request of another protocol version");
  request req;
  req.kind = r.u8();
  req.timeout_ms = r.u32();
  req.params = r.str();
  req.bytes = std::string{r.rest()};
  if (!r.done() || req.kind == 0)
    return protocol_error("a malformed request");
  return req;
}

std::string encode_answer(const answer& a) {
  wire_writer w;
  w.data().reserve(3 + a.body.size() + 16);
  w.u8(protocol_version);
  w.u8(static_cast<uint8_t>(a.status));
  w.u8(a.retiring ? 1 : 0);
  if (a.status == answer_status::ok) {
    w.raw(a.body);
  } else if (a.status == answer_status::error) {
    w.u8(static_cast<uint8_t>(a.err.cls));
    w.str(a.err.code);
    w.str(a.err.message);
  }
  return w.take();
}

result<answer> decode_answer(std::string_view payload) {
  wire_reader r{payload};
  if (r.u8() != protocol_version || r.failed())
    return protocol_error("an answer of another protocol version");
  answer a;
  auto status = r.u8();
  auto flags = r.u8();
  if (r.failed() || status > 2 || flags > 1)
    return protocol_error("a malformed answer");
  a.status = static_cast<answer_status>(status);
  a.retiring = flags == 1;
  if (a.status == answer_status::ok) {
    a.body = std::string{r.rest()};
  } else if (a.status == answer_status::error) {
    auto cls = r.u8();
    if (cls > static_cast<uint8_t>(error_class::claim_lost))
      r.fail();
    a.err.cls = static_cast<error_class>(cls);
    a.err.code = r.str();
    a.err.message = r.str();
  }
  if (!r.done())
    return protocol_error("a malformed answer");
  return a;
}

// -- frames ------------------------------------------------------------------------------------

io_status write_frame(int fd, std::string_view payload, uint32_t max, io_deadline deadline) {
  if (payload.empty() || payload.size() > max)
    return io_status::too_large;
  char head[4];
  auto n = static_cast<uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i)
    head[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  if (auto s = write_all(fd, head, sizeof head, deadline); s != io_status::ok)
    return s;
  return write_all(fd, payload.data(), payload.size(), deadline);
}

io_status write_request(int fd, const request_view& req, uint32_t max, io_deadline deadline) {
  // The head (length, version, kind, timeout, parameters), then the bytes from where they are.
  uint64_t size = 10 + uint64_t{req.params.size()} + req.bytes.size();
  if (size > max)
    return io_status::too_large;
  wire_writer w;
  w.u32(static_cast<uint32_t>(size));
  w.u8(protocol_version);
  w.u8(req.kind);
  w.u32(req.timeout_ms);
  w.str(req.params);
  auto& head = w.data();
  if (auto s = write_all(fd, head.data(), head.size(), deadline); s != io_status::ok)
    return s;
  return write_all(fd, req.bytes.data(), req.bytes.size(), deadline);
}

io_status read_frame(int fd, uint32_t max, std::string& out, io_deadline deadline) {
  char head[4];
  if (auto s = read_all(fd, head, sizeof head, deadline); s != io_status::ok)
    return s;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i)
    n |= uint32_t{static_cast<uint8_t>(head[i])} << (8 * i);
  if (n == 0 || n > max)
    return io_status::too_large;
  out.resize(n);
  return read_all(fd, out.data(), n, deadline);
}

// -- kinds -------------------------------------------------------------------------------------

std::string encode(const page_request& x) {
  wire_writer w;
  w.str(x.mime_type);
  w.i32(x.index);
  put(w, x.options.tesseract);
  put(w, x.options.limits);
  w.f64(x.options.quality_threshold);
  w.boolean(x.options.allow_preprocessing);
  w.f64(x.options.defect_report_threshold);
  return w.take();
}

result<page_request> decode_page_request(std::string_view in) {
  wire_reader r{in};
  page_request x;
  x.mime_type = r.str();
  x.index = r.i32();
  get(r, x.options.tesseract);
  get(r, x.options.limits);
  x.options.quality_threshold = r.f64();
  x.options.allow_preprocessing = r.boolean();
  x.options.defect_report_threshold = r.f64();
  if (x.index < 0)
    r.fail();
  return finished(r, std::move(x), "page request");
}

std::string encode(const page_answer& x) {
  wire_writer w;
  w.u8(static_cast<uint8_t>(x.kind));
  w.i32(x.page_count);
  auto& o = x.outcome;
  w.i32(o.page.number);
  w.str(o.page.text);
  w.f64(o.page.quality_score);
  w.u32(static_cast<uint32_t>(o.page.defects.size()));
  for (auto& d : o.page.defects) {
    w.str(d.type);
    w.f64(d.confidence);
  }
  w.u32(static_cast<uint32_t>(o.page.words.size()));
  for (auto& word : o.page.words) {
    w.str(word.text);
    for (float v : {word.left, word.top, word.right, word.bottom})
      w.f64(v);
  }
  w.boolean(o.native);
  w.str(o.warning);
  w.boolean(o.preprocessed);
  put(w, o.image);
  w.u32(static_cast<uint32_t>(x.metadata.size()));
  for (auto& [name, value] : x.metadata) {
    w.str(name);
    w.str(value);
  }
  return w.take();
}

result<page_answer> decode_page_answer(std::string_view in) {
  wire_reader r{in};
  page_answer x;
  auto kind = r.u8();
  if (kind > static_cast<uint8_t>(file_kind::tiff))
    r.fail();
  x.kind = static_cast<file_kind>(kind);
  x.page_count = r.i32();
  auto& o = x.outcome;
  o.page.number = r.i32();
  o.page.text = r.str();
  o.page.quality_score = r.f64();
  auto defects = r.count(max_list, 12);
  for (uint32_t i = 0; i < defects && !r.failed(); ++i) {
    quality_defect d;
    d.type = r.str();
    d.confidence = r.f64();
    o.page.defects.push_back(std::move(d));
  }
  auto words = r.count(static_cast<uint32_t>(max_page_words), 36);
  for (uint32_t i = 0; i < words && !r.failed(); ++i) {
    page_word word;
    word.text = r.str();
    for (float* v : {&word.left, &word.top, &word.right, &word.bottom}) {
      double part = r.f64();
      // Within the page (NaN fails too), and a float's value: the helper writes floats, so any
      // other double is not what a helper sends, and one value has one encoding.
      if (!(part >= 0 && part <= 1) || static_cast<double>(static_cast<float>(part)) != part)
        r.fail();
      *v = static_cast<float>(part);
    }
    if (word.text.size() > max_word_bytes)
      r.fail();
    o.page.words.push_back(std::move(word));
  }
  o.native = r.boolean();
  o.warning = r.str();
  o.preprocessed = r.boolean();
  get(r, o.image);
  auto entries = r.count(max_metadata_entries, 8);
  for (uint32_t i = 0; i < entries && !r.failed(); ++i) {
    auto name = r.str();
    auto value = r.str();
    if (name.empty() || name.size() > 32 || value.size() > max_metadata_value_bytes
        || clean_text(name) != name || clean_text(value) != value)
      r.fail();
    x.metadata.emplace_back(std::move(name), std::move(value));
  }
  return finished(r, std::move(x), "page answer");
}

std::string encode(const preprocess_request& x) {
  wire_writer w;
  w.str(x.mime_type);
  put(w, x.limits);
  return w.take();
}

result<preprocess_request> decode_preprocess_request(std::string_view in) {
  wire_reader r{in};
  preprocess_request x;
  x.mime_type = r.str();
  get(r, x.limits);
  return finished(r, std::move(x), "preprocess request");
}

std::string encode(const gray_pixels& x) {
  wire_writer w;
  put(w, x);
  return w.take();
}

result<gray_pixels> decode_gray_pixels(std::string_view in) {
  wire_reader r{in};
  gray_pixels x;
  get(r, x);
  return finished(r, std::move(x), "image");
}

std::string encode(const unpack_params& x) {
  wire_writer w;
  w.u8(static_cast<uint8_t>(x.kind));
  w.u64(x.limits.max_total_bytes);
  w.i32(x.limits.max_members);
  w.f64(x.limits.max_ratio);
  w.u64(x.limits.ratio_floor_bytes);
  w.u64(x.limits.max_member_bytes);
  return w.take();
}

result<unpack_params> decode_unpack_params(std::string_view in) {
  wire_reader r{in};
  unpack_params x;
  auto kind = r.u8();
  if (kind > static_cast<uint8_t>(container_kind::pst))
    r.fail();
  x.kind = static_cast<container_kind>(kind);
  x.limits.max_total_bytes = r.u64();
  x.limits.max_members = r.i32();
  x.limits.max_ratio = r.f64();
  x.limits.ratio_floor_bytes = r.u64();
  x.limits.max_member_bytes = r.u64();
  return finished(r, x, "unpack request");
}

std::string encode(const unpacked& x) {
  wire_writer w;
  size_t size = 64 + x.body_text.size();
  for (auto& m : x.members)
    size += 8 + m.name.size() + m.bytes.size();
  w.data().reserve(size);
  w.u32(static_cast<uint32_t>(x.members.size()));
  for (auto& m : x.members) {
    w.str(m.name);
    w.str(m.bytes);
  }
  w.str(x.body_text);
  w.str(x.from);
  w.str(x.to);
  w.str(x.subject);
  w.str(x.date);
  w.strings(x.problems);
  return w.take();
}

result<unpacked> decode_unpacked(std::string_view in) {
  wire_reader r{in};
  unpacked x;
  auto members = r.count(max_list, 8);
  x.members.reserve(members);
  for (uint32_t i = 0; i < members && !r.failed(); ++i) {
    unpacked_member m;
    m.name = r.str();
    m.bytes = r.str();
    x.members.push_back(std::move(m));
  }
  x.body_text = r.str();
  x.from = r.str();
  x.to = r.str();
  x.subject = r.str();
  x.date = r.str();
  x.problems = r.strings(max_list);
  return finished(r, std::move(x), "unpack answer");
}

std::string encode(const render_request& x) {
  wire_writer w;
  w.str(x.mime_type);
  w.i32(x.index);
  w.i32(x.dpi);
  w.i32(x.max_width);
  return w.take();
}

result<render_request> decode_render_request(std::string_view in) {
  wire_reader r{in};
  render_request x;
  x.mime_type = r.str();
  x.index = r.i32();
  x.dpi = r.i32();
  x.max_width = r.i32();
  if (x.dpi <= 0 || x.dpi > 1200 || x.max_width <= 0 || x.max_width > 20000)
    r.fail();
  return finished(r, std::move(x), "render request");
}

std::string encode(const page_image& x) {
  wire_writer w;
  w.str(x.content_type);
  w.i32(x.page_count);
  w.raw(x.bytes);
  return w.take();
}

result<page_image> decode_page_image(std::string_view in) {
  wire_reader r{in};
  page_image x;
  x.content_type = r.str();
  x.page_count = r.i32();
  x.bytes = std::string{r.rest()};
  if (x.page_count < 0)
    r.fail();
  return finished(r, std::move(x), "page image");
}

} // namespace ingestd::sandbox
