// Fuzz target: intake/manifest, the CSV of `ingestd submit --manifest` (a load file, often written
// by other software), and the same metadata as the HTTP intake's JSON (X-Metadata). Input: the
// file, read as both. Properties: a refused manifest or JSON says why; every row has a line
// within the input's, and either a reason or a path; metadata keeps to the limits and is UTF-8
// (what the ingestion's JSON and the database accept), its names once each.
#include <set>
#include <string>
#include <string_view>

#include "intake/manifest.hpp"
#include "messages/text.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

namespace {

void check_metadata_json(std::string_view in, const manifest_limits& limits) {
  auto fields = parse_metadata_json(in, limits);
  if (!fields) {
    FUZZ_CHECK(fields.error().code == "intake.invalid_metadata" && fields.error().permanent());
    FUZZ_CHECK(fields.error().message.rfind("metadata: ", 0) == 0);
    return;
  }
  FUZZ_CHECK(fields->size() <= limits.max_columns);
  std::set<std::string> names;
  for (const auto& [name, value] : *fields) {
    FUZZ_CHECK(!name.empty() && name.size() <= limits.max_name_bytes);
    FUZZ_CHECK(!value.empty() && value.size() <= limits.max_value_bytes);
    FUZZ_CHECK(clean_text(name) == name && clean_text(value) == value);
    FUZZ_CHECK(names.insert(name).second);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  manifest_limits limits;
  limits.max_bytes = 1 << 20;
  check_metadata_json(in, limits);
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
