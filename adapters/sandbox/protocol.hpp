// The decoder protocol: what the daemon and a decoder helper process say to each other over a
// pair of pipes, one request and its answer at a time.
//
//   frame    = u32 length (little-endian), then `length` bytes; 1 <= length <= the maximum frame
//              (both sides know it; a larger length is refused before anything is allocated)
//   request  = u8 version | u8 kind | u32 timeout_ms | u32 params length | params | bytes (the
//   rest) answer   = u8 version | u8 status (ok, error, ready) | u8 flags (bit 0: the helper
//   retires
//              after this answer) | ok: the kind's answer | error: u8 class, str code, str message
//   str      = u32 length, then its bytes
//
// A helper writes one `ready` answer when it has started (loaded its data and installed its
// sandbox), then reads requests until its input closes. The kinds' parameters and answers are
// encoded by the functions below with wire.hpp; every decoder checks bounds and that nothing is
// left over.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/containers/unpacker.hpp"
#include "adapters/ocr/page_work.hpp"
#include "messages/result.hpp"
#include "review/page_images.hpp"

namespace ingestd::sandbox {

inline constexpr uint8_t protocol_version = 1;

/// The request kinds. 200 and above are reserved for tests' own helpers.
enum class request_kind : uint8_t {
  /// One page of a document: PDF text layer, or rendered/decoded and OCRed (and preprocessed when
  /// poor), with the document's kind and page count. page_request -> page_answer.
  transcribe_page = 1,
  /// The single page of an image preprocessed for a second reading by a remote provider.
  /// preprocess_request -> gray_pixels (empty: nothing to improve).
  preprocess_page = 2,
  /// A container taken apart (libarchive, GMime). unpack_params -> unpacked.
  unpack = 3,
  /// A page image for the review desk. render_request -> page_image.
  render_page = 4,
  /// The document's page count, no page decoded (intake's size class). preprocess_request (its
  /// type and limits) -> u32.
  count_pages = 5,
};
inline constexpr uint8_t first_test_kind = 200;

std::string_view to_string(request_kind kind);

struct request {
  uint8_t kind = 0;
  /// The work's time left when it was sent; the helper's own deadline (Tesseract's) is this.
  uint32_t timeout_ms = 0;
  std::string params;
  /// The document's bytes.
  std::string bytes;
};

enum class answer_status : uint8_t { ok = 0, error = 1, ready = 2 };

struct answer {
  answer_status status = answer_status::ok;
  /// The helper exits after this answer (its CPU-time budget is nearly spent).
  bool retiring = false;
  /// ok: the kind's answer.
  std::string body;
  /// error: what the handler answered.
  ingestd::error err;
};

/// A request to send without copying its bytes.
struct request_view {
  uint8_t kind = 0;
  uint32_t timeout_ms = 0;
  std::string_view params;
  std::string_view bytes;
};

/// A frame's payload. Errors (permanent): "decode.protocol" naming what is wrong.
std::string encode_request(const request& req);
std::string encode_request(const request_view& req);
result<request> decode_request(std::string_view payload);
std::string encode_answer(const answer& a);
result<answer> decode_answer(std::string_view payload);

// -- frames on file descriptors ----------------------------------------------------------------

enum class io_status { ok, closed, timeout, too_large, failed };
using io_deadline = std::optional<std::chrono::steady_clock::time_point>;

/// Writes one frame (a payload of 1..max bytes: too_large otherwise, nothing written). Waits for
/// the pipe until `deadline` (none: as long as it takes). closed: the reader is gone.
io_status write_frame(int fd, std::string_view payload, uint32_t max, io_deadline deadline = {});
/// Writes `req` as one frame, its bytes straight from the caller's buffer.
io_status write_request(int fd, const request_view& req, uint32_t max, io_deadline deadline = {});
/// Reads one frame into `out`. too_large: the length is 0 or above `max` (nothing more read);
/// closed: end of input before a whole frame.
io_status read_frame(int fd, uint32_t max, std::string& out, io_deadline deadline = {});

// -- the kinds' parameters and answers ---------------------------------------------------------

struct page_request {
  std::string mime_type;
  int32_t index = 0;
  page_options options;
};

struct page_answer {
  file_kind kind = file_kind::pdf;
  int32_t page_count = 0;
  page_outcome outcome;
  /// With page 0: the file's own metadata (at most max_metadata_entries, each value at most
  /// max_metadata_value_bytes; a longer answer is malformed).
  document_metadata metadata;
};
inline constexpr uint32_t max_metadata_entries = 16;

struct preprocess_request {
  std::string mime_type;
  document_limits limits;
};

struct unpack_params {
  container_kind kind = container_kind::zip;
  unpack_limits limits;
};

struct render_request {
  std::string mime_type;
  int32_t index = 0;
  int32_t dpi = 110;
  int32_t max_width = 1800;
};

std::string encode(const page_request& x);
std::string encode(const page_answer& x);
std::string encode(const preprocess_request& x);
std::string encode(const gray_pixels& x);
std::string encode(const unpack_params& x);
std::string encode(const unpacked& x);
std::string encode(const render_request& x);
std::string encode(const page_image& x);

result<page_request> decode_page_request(std::string_view in);
result<page_answer> decode_page_answer(std::string_view in);
result<preprocess_request> decode_preprocess_request(std::string_view in);
result<gray_pixels> decode_gray_pixels(std::string_view in);
result<unpack_params> decode_unpack_params(std::string_view in);
result<unpacked> decode_unpacked(std::string_view in);
result<render_request> decode_render_request(std::string_view in);
result<page_image> decode_page_image(std::string_view in);

} // namespace ingestd::sandbox
