// Where outside bytes are parsed and rendered: a decoder sends a request to a helper process and
// waits for its answer (helper_pool.hpp). The typed calls below are what the adapters use
// (local_transcriber, recovering_transcriber, container_unpacker, the review desk); each checks
// the helper's answer against the request's limits before the daemon uses it, so a helper that
// was taken over cannot hand the daemon more than a well-behaved one would.
#pragma once

#include <chrono>
#include <stop_token>
#include <string>
#include <string_view>

#include "adapters/sandbox/protocol.hpp"
#include "messages/result.hpp"

namespace ingestd::sandbox {

using clock_type = std::chrono::steady_clock;

class decoder {
public:
  virtual ~decoder() = default;

  /// Blocking: `req` to a helper, its answer's body back, by `deadline` (plus the pool's grace
  /// for a helper that is finishing). Errors: the handler's own (ocr.*, container.*,
  /// review.*); decode.crashed, decode.out_of_memory, decode.timeout when the helper died on
  /// it (transient); ocr.busy when no helper could be had before the deadline (transient, the
  /// node's). Thread-safe: each calling thread gets a helper of its own for the call.
  /// A stop requested on `stop` while the helper works ends the helper (the pool starts another)
  /// and answers decode.cancelled at once (transient; the caller no longer wants the answer).
  virtual result<std::string> call(const request_view& req, clock_type::time_point deadline,
                                   std::stop_token stop)
      = 0;
  result<std::string> call(const request_view& req, clock_type::time_point deadline) {
    return call(req, deadline, std::stop_token{});
  }
};

/// Page `index` of the document (and its kind and page count), checked: the page count within
/// options.limits.max_pages, the image valid and within max_page_pixels.
result<page_answer> transcribe_page(decoder& d, std::string_view bytes, std::string_view mime_type,
                                    int index, const page_options& options,
                                    clock_type::time_point deadline);

/// The single page preprocessed (empty: nothing to improve).
result<gray_pixels> preprocess_page(decoder& d, std::string_view bytes, std::string_view mime_type,
                                    const document_limits& limits, clock_type::time_point deadline);

/// The container taken apart, checked against `limits`: the number of members, their total
/// and each one's size (container_unpacker checks the members' paths). A stop on `stop` ends it
/// early (decode.cancelled).
result<unpacked> unpack(decoder& d, std::string_view bytes, container_kind kind,
                        const unpack_limits& limits, clock_type::time_point deadline,
                        std::stop_token stop = {});

/// A page image for the desk, checked: PNG or JPEG, at most `max_bytes`.
result<page_image> render_page(decoder& d, std::string_view bytes, std::string_view mime_type,
                               int index, int dpi, int max_width, size_t max_bytes,
                               clock_type::time_point deadline);

/// The document's page count (no page decoded).
result<int> count_pages(decoder& d, std::string_view bytes, std::string_view mime_type,
                        const document_limits& limits, clock_type::time_point deadline);

/// The time left before `deadline` in whole milliseconds, at least 1.
uint32_t timeout_ms(clock_type::time_point deadline);

} // namespace ingestd::sandbox
