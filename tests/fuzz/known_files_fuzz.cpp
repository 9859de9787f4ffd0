// Fuzz target: adapters/db/known_hash_reader, which reads the hash lists given to
// `ingestd known-files import` (NSRL-style CSV with a header, or one hash per line), and
// checked_known_hash, which checks the hashes of `ingestd known-files add`.
// Input: the list.
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/db/known_hash_reader.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

namespace {

struct read_result {
  std::vector<known_hash> hashes;
  int64_t lines = 0;
  std::optional<error> failed;
};

/// The whole list, `want` hashes at a time (the import asks for 20,000).
read_result read_all(std::string_view in, size_t want) {
  std::istringstream stream{std::string{in}};
  known_hash_reader reader{stream};
  read_result out;
  for (;;) {
    std::vector<known_hash> batch;
    auto more = reader.next(batch, want);
    out.hashes.insert(out.hashes.end(), batch.begin(), batch.end());
    if (!more) {
      out.failed = more.error();
      break;
    }
    // A line adds at most two hashes (an MD5 and a SHA-256 column).
    FUZZ_CHECK(batch.size() < want + 2);
    if (!*more)
      break;
  }
  out.lines = reader.lines();
  return out;
}

bool lower_hex(const std::string& s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  auto all = read_all(in, 20000);

  int64_t newlines = 0;
  for (char c : in)
    newlines += c == '\n';
  FUZZ_CHECK(all.lines >= 0 && all.lines <= newlines + 1);
  FUZZ_CHECK(static_cast<int64_t>(all.hashes.size()) <= 2 * all.lines);
  for (const auto& h : all.hashes) {
    FUZZ_CHECK((h.algorithm == "md5" && h.hash.size() == 32)
               || (h.algorithm == "sha256" && h.hash.size() == 64));
    FUZZ_CHECK(lower_hex(h.hash));
    auto checked = checked_known_hash(h);
    FUZZ_CHECK(checked && checked->hash == h.hash && checked->algorithm == h.algorithm);
  }
  if (all.failed) {
    // A clear error: it names the line the import stopped at, and quotes at most 80 bytes of it.
    const auto& e = *all.failed;
    FUZZ_CHECK(e.code == "known_files.bad_line" && e.permanent());
    auto prefix = "line " + std::to_string(all.lines) + ": ";
    FUZZ_CHECK(e.message.rfind(prefix, 0) == 0);
    FUZZ_CHECK(e.message.size() <= prefix.size() + 300);
  }

  // The chunk size changes nothing: one hash at a time reads the same hashes and stops alike.
  auto one = read_all(in, 1);
  FUZZ_CHECK(one.lines == all.lines && one.hashes.size() == all.hashes.size());
  for (size_t i = 0; i < all.hashes.size(); ++i)
    FUZZ_CHECK(one.hashes[i].hash == all.hashes[i].hash
               && one.hashes[i].algorithm == all.hashes[i].algorithm);
  FUZZ_CHECK(one.failed.has_value() == all.failed.has_value());
  if (all.failed)
    FUZZ_CHECK(one.failed->message == all.failed->message);

  // `known-files add` computes its hashes, but the check must hold for any text.
  auto head = in.substr(0, 64);
  for (const char* algorithm : {"md5", "sha256", "sha1"}) {
    auto checked = checked_known_hash({std::string{head}, algorithm});
    if (checked) {
      FUZZ_CHECK(checked->algorithm == algorithm && lower_hex(checked->hash));
      FUZZ_CHECK(checked->hash.size() == (checked->algorithm == "md5" ? 32u : 64u));
    } else {
      FUZZ_CHECK(checked.error().code == "known_files.bad_hash");
      FUZZ_CHECK(checked.error().message.size() <= 200);
    }
  }
  return 0;
}
