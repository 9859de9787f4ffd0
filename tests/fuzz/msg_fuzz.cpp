// Fuzz target: Outlook messages (.msg, OLE2) through msg_unpacker (libgsf) under small limits, and
// the unpack stage's way to it: detection, container_unpacker's choice of reader, the members.
// Input: the bytes, read as an Outlook message. Seeds (corpus/msg/): messages made with
// tests/support/containers/outlook_maker.hpp (attachments, an attached message, none).
#include <glib.h>

#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/unpack_checks.hpp"

using namespace ingestd;

namespace {

// A critical of GLib's own (a refused GObject call) is a misuse of the API by the unpacker and
// aborts like a failed check. libgsf's OLE2 reader reports damaged input with criticals of its
// own domain ("libgsf:msole: ... assertion 'block < ole->info->max_block' failed") and then
// answers no file, which the unpacker calls corrupt: those are a property of the input.
void abort_on_critical(const gchar* domain, GLogLevelFlags level, const gchar* message,
                       gpointer /*unused*/) {
  bool from_reader = domain != nullptr && g_str_has_prefix(domain, "libgsf") != FALSE;
  if ((level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL)) != 0 && !from_reader) {
    std::fprintf(stderr, "%s: %s\n", domain != nullptr ? domain : "GLib", message);
    std::abort();
  }
}

const bool criticals_abort = [] {
  g_log_set_default_handler(abort_on_critical, nullptr);
  return true;
}();

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
