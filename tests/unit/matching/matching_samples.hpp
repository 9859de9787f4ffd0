// What the matching tests share: the samples under tests/unit/matching/samples/ and document ids
// that say their number.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "messages/uuid.hpp"

namespace ingestd::test {

/// The sample `name`, read from the source tree (INGESTD_SOURCE_DIR, else the current folder).
inline std::string read_sample(const std::string& name) {
  const char* src = std::getenv("INGESTD_SOURCE_DIR");
  std::ifstream in{std::string{src ? src : "."} + "/tests/unit/matching/samples/" + name};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The id of document number `n`.
inline uuid id(uint64_t n) {
  return uuid{0x0190000000007000ULL, 0x8000000000000000ULL | n};
}

} // namespace ingestd::test
