// Fuzz target: Outlook messages (.msg, OLE2) through msg_unpacker (libgsf) under small limits, and
// the unpack stage's way to it: detection, container_unpacker's choice of reader, the members.
// Input: the bytes, read as an Outlook message. Seeds (corpus/msg/): messages made with
// tests/support/containers/outlook_maker.hpp (attachments, an attached message, none).
#include "tests/fuzz/glib_criticals.hpp"
#include "tests/fuzz/unpack_checks.hpp"

using namespace ingestd;

namespace {

const bool criticals_abort = fuzz::abort_on_glib_criticals("libgsf");

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FUZZ_CHECK(criticals_abort);
  auto in = fuzz::as_view(data, size);
  const auto limits = fuzz::small_limits();
  const msg_unpacker outlook;
  auto answer = outlook.unpack(in, container_kind::msg, limits);
  fuzz::check_answer(answer, limits, fuzz::reader::mime);
  auto staged = fuzz::unpack_like_the_stage(in, limits);
  if (staged) {
    fuzz::check_answer(staged->answer, limits, fuzz::reader_of(staged->kind));
    // The stage reads a detected Outlook message with this same reader.
    if (staged->kind == container_kind::msg)
      FUZZ_CHECK(fuzz::same_answer(staged->answer, answer));
  }
  // A kind it does not read is refused, whatever the bytes.
  auto other = outlook.unpack(in, container_kind::eml, limits);
  FUZZ_CHECK(!other && other.error().permanent() && other.error().code == "container.unsupported");
  return 0;
}
