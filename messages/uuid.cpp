// UUID parsing, formatting and generation (v4 and v7).
#include "messages/uuid.hpp"

#include <chrono>
#include <random>

#include "messages/hex.hpp"

namespace ingestd {

namespace {

uint64_t random_u64() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  return gen();
}

} // namespace

std::optional<uuid> uuid::parse(std::string_view text) {
  if (text.size() != 36)
    return std::nullopt;
  uuid result;
  int nibbles = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i] != '-')
        return std::nullopt;
      continue;
    }
    auto v = hex_value(text[i]);
    if (v < 0)
      return std::nullopt;
    auto& half = nibbles < 16 ? result.hi : result.lo;
    half = (half << 4) | static_cast<uint64_t>(v);
    ++nibbles;
  }
  return result;
}

uuid uuid::v7() {
  using namespace std::chrono;
  auto ms = static_cast<uint64_t>(
      duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
  uuid result;
  result.hi = (ms << 16) | 0x7000 | (random_u64() & 0x0FFF);
  result.lo = (random_u64() & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  return result;
}

uuid uuid::v4() {
  uuid result;
  result.hi = (random_u64() & 0xFFFFFFFFFFFF0FFFULL) | 0x4000;
  result.lo = (random_u64() & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  return result;
}

std::string uuid::str() const {
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20)
      out.push_back('-');
    auto half = i < 16 ? hi : lo;
    auto shift = 60 - 4 * (i % 16);
    out.push_back(hex_digit(static_cast<unsigned>(half >> shift)));
  }
  return out;
}

} // namespace ingestd
