// Fuzz target: e-mails and mboxes through mime_unpacker (GMime) under small limits, and the
// unpack stage's way to it: detection, container_unpacker's choice of reader, the members.
// Input: the bytes, read as an e-mail and as an mbox.
#include "tests/fuzz/glib_criticals.hpp"
#include "tests/fuzz/unpack_checks.hpp"

using namespace ingestd;

namespace {

const bool criticals_abort = fuzz::abort_on_glib_criticals(nullptr);

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FUZZ_CHECK(criticals_abort);
  auto in = fuzz::as_view(data, size);
  const auto limits = fuzz::small_limits();
  const mime_unpacker mail;
  auto staged = fuzz::unpack_like_the_stage(in, limits);

  for (auto kind : {container_kind::eml, container_kind::mbox}) {
    auto answer = mail.unpack(in, kind, limits);
    fuzz::check_answer(answer, limits, fuzz::reader::mime);
    // The stage reads a detected e-mail or mbox with this same reader.
    if (staged && staged->kind == kind)
      FUZZ_CHECK(fuzz::same_answer(staged->answer, answer));
    // Each attached message (and each message of an mbox) is an .eml the stage reads in turn.
    fuzz::unpack_members(answer, limits);
  }
  if (staged)
    fuzz::check_answer(staged->answer, limits, fuzz::reader_of(staged->kind));

  // A kind it does not read is refused, whatever the bytes.
  auto archive = mail.unpack(in, container_kind::zip, limits);
  FUZZ_CHECK(!archive && archive.error().permanent()
             && archive.error().code == "container.unsupported");
  return 0;
}
