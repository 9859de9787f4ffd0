// Fuzz target: intake/manifest, the CSV of `ingestd submit --manifest` (a load file, often written
// by other software). Input: the file. Properties: a refused manifest says why; every row has a
// line within the input's, and either a reason or a path; metadata keeps to the limits and is
// UTF-8 (what the ingestion's JSON and the database accept).
#include <string>

#include "intake/manifest.hpp"
#include "messages/text.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  manifest_limits limits;
  limits.max_bytes = 1 << 20;
  auto rows = parse_manifest(in, limits);
  if (!rows) {
    FUZZ_CHECK(rows.error().code == "intake.manifest");
    FUZZ_CHECK(!rows.error().message.empty());
    return 0;
  }
  size_t lines = 1;
  for (char c : in)
    lines += c == '\n' ? 1 : 0;
  size_t previous = 1;
  for (const auto& row : *rows) {
    FUZZ_CHECK(row.line > previous && row.line <= lines);
    previous = row.line;
    FUZZ_CHECK(!row.error.empty() || !row.path.empty());
    if (!row.error.empty())
      continue;
    FUZZ_CHECK(row.metadata.size() < limits.max_columns);
    for (const auto& [name, value] : row.metadata) {
      FUZZ_CHECK(!name.empty() && name.size() <= limits.max_name_bytes);
      FUZZ_CHECK(!value.empty() && value.size() <= limits.max_value_bytes);
      FUZZ_CHECK(clean_text(name) == name && clean_text(value) == value);
      FUZZ_CHECK(name != "path");
    }
  }
  return 0;
}
