// Fuzz target: what the intake reads from a request before anything is stored: the tenant and
// source UUIDs (X-Tenant-Id, X-Uploaded-By, queue message bodies), the file type sniffed from the
// body's first bytes, the MIME type, and the configured bind address.
#include <cctype>

#include "intake/intake_server.hpp"
#include "messages/file_type.hpp"
#include "messages/uuid.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);

  if (auto id = uuid::parse(in)) {
    // Parsing accepts exactly the canonical form, in either case.
    auto text = id->str();
    FUZZ_CHECK(text.size() == 36);
    for (size_t i = 0; i < 36; ++i)
      FUZZ_CHECK(text[i] == std::tolower(static_cast<unsigned char>(in[i])));
    FUZZ_CHECK(uuid::parse(text) == id);
  }

  if (auto type = detect_file_type(in)) {
    FUZZ_CHECK(!type->mime.empty() && !type->ext.empty());
    auto again = file_type_of_mime(type->mime);
    FUZZ_CHECK(again && again->kind == type->kind);
  }
  if (auto type = file_type_of_mime(in))
    FUZZ_CHECK(type->mime == in);
  if (auto box = detect_container_type(in)) {
    auto again = container_type_of_mime(box->mime);
    FUZZ_CHECK(again && again->kind == box->kind);
  }

  (void)is_loopback_bind(in);
  auto exposure = check_intake_exposure(in, "");
  if (!exposure)
    FUZZ_CHECK(exposure.error().permanent());
  return 0;
}
