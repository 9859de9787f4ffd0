// Fuzz target: ZIP, TAR, .tar.gz, 7z and RAR through archive_unpacker (libarchive) under small
// limits, and the unpack stage's way to it: detection, container_unpacker's choice of reader, the
// members. Input: the container's bytes, read as each archive kind in turn.
#include "tests/fuzz/unpack_checks.hpp"

using namespace ingestd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  const auto limits = fuzz::small_limits();
  const archive_unpacker archives;
  auto staged = fuzz::unpack_like_the_stage(in, limits);

  for (auto kind : {container_kind::zip, container_kind::tar, container_kind::tar_gz,
                    container_kind::seven_zip, container_kind::rar}) {
    auto answer = archives.unpack(in, kind, limits);
    fuzz::check_answer(answer, limits, fuzz::reader::archive);
    // The stage reads a detected archive with this same reader.
    if (staged && staged->kind == kind)
      FUZZ_CHECK(fuzz::same_answer(staged->answer, answer));
  }
  if (staged) {
    fuzz::check_answer(staged->answer, limits, fuzz::reader_of(staged->kind));
    fuzz::unpack_members(staged->answer, limits);
  }

  // A kind it does not read is refused, whatever the bytes.
  auto mail = archives.unpack(in, container_kind::eml, limits);
  FUZZ_CHECK(!mail && mail.error().permanent() && mail.error().code == "container.unsupported");
  return 0;
}
