// Fuzz target: the decoder protocol (adapters/sandbox/protocol.hpp), what a decoder helper parses
// from the daemon and the daemon parses from a helper that may have been taken over. Input: one
// frame's payload, read as a request (then its parameters as every kind's), as an answer (then its
// body as every kind's answer), and as raw bytes on a pipe through read_frame.
// Properties: nothing crashes or over-reads; whatever decodes encodes back to the same bytes (a
// single encoding per value), and a frame read from a pipe never exceeds its maximum.
#include <fcntl.h>
#include <unistd.h>

#include "adapters/sandbox/protocol.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;
using namespace ingestd::sandbox;

namespace {

template <class Decode>
void same_bytes_back(std::string_view in, Decode decode) {
  auto value = decode(in);
  if (value)
    FUZZ_CHECK(encode(*value) == in);
}

void every_kind(std::string_view in) {
  same_bytes_back(in, decode_page_request);
  same_bytes_back(in, decode_page_answer);
  same_bytes_back(in, decode_preprocess_request);
  same_bytes_back(in, decode_gray_pixels);
  same_bytes_back(in, decode_unpack_params);
  same_bytes_back(in, decode_unpacked);
  same_bytes_back(in, decode_render_request);
  same_bytes_back(in, decode_page_image);
  if (auto a = decode_page_answer(in); a && !a->outcome.image.empty())
    FUZZ_CHECK(a->outcome.image.valid());
}

void through_a_pipe(std::string_view in) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return;
  // Within the pipe's buffer, so the write never waits for the reader.
  auto n = std::min<size_t>(in.size(), 60000);
  if (n > 0 && ::write(fds[1], in.data(), n) != static_cast<ssize_t>(n)) {
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  ::close(fds[1]);
  constexpr uint32_t max = 4096;
  std::string frame;
  auto got = read_frame(fds[0], max, frame);
  ::close(fds[0]);
  FUZZ_CHECK(got == io_status::ok || got == io_status::closed || got == io_status::too_large);
  if (got == io_status::ok)
    FUZZ_CHECK(!frame.empty() && frame.size() <= max && frame.size() + 4 <= n);
  if (got == io_status::too_large)
    FUZZ_CHECK(frame.size() <= max);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  if (auto req = decode_request(in)) {
    FUZZ_CHECK(encode_request(*req) == in);
    FUZZ_CHECK(req->kind != 0);
    every_kind(req->params);
  }
  if (auto a = decode_answer(in)) {
    FUZZ_CHECK(encode_answer(*a) == in);
    FUZZ_CHECK(a->err.cls == error_class::transient || a->err.cls == error_class::permanent
               || a->err.cls == error_class::claim_lost);
    every_kind(a->body);
  }
  every_kind(in);
  through_a_pipe(in);
  return 0;
}
