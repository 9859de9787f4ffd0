// UUIDs as the protocol carries them: ingestion, document and claim-token ids. Ids are
// generated as UUIDv7 (time-ordered, RFC 9562) so that new rows append to the primary key index.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <caf/meta/type_name.hpp>

namespace ingestd {

/// A 128-bit UUID held as two big-endian halves.
struct uuid {
  uint64_t hi = 0;
  uint64_t lo = 0;

  /// Parses the canonical 8-4-4-4-12 hex form (either case); anything else is nullopt.
  static std::optional<uuid> parse(std::string_view text);

  /// A new UUIDv7: 48-bit Unix milliseconds, then random bits (version 7, variant 10).
  static uuid v7();

  /// A new random UUIDv4.
  static uuid v4();

  /// The canonical lower-case form, e.g. "0190f1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b".
  std::string str() const;

  bool is_nil() const { return hi == 0 && lo == 0; }
  int version() const { return static_cast<int>((hi >> 12) & 0xF); }

  // clang-tidy 14 sees the literal 0 of the synthesized comparison category checks as a pointer.
  auto operator<=>(const uuid&) const = default; // NOLINT(modernize-use-nullptr)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, uuid& x) {
  return f(caf::meta::type_name("uuid"), x.hi, x.lo);
}

struct uuid_hash {
  size_t operator()(const uuid& x) const noexcept { return x.hi ^ (x.lo * 0x9E3779B97F4A7C15ULL); }
};

} // namespace ingestd
