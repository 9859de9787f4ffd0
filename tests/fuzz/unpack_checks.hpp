// Shared by the container fuzz targets (archive, mime): the small limits the unpackers run with,
// the properties every answer keeps, and the unpack stage's own way in (detection, then
// container_unpacker's choice of reader).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "adapters/containers/unpacker.hpp"
#include "adapters/support/cpu_executor.hpp"
#include "messages/file_type.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace ingestd::fuzz {

/// Limits small enough for inputs of a few KiB to reach every check: a member over 4 KiB is
/// skipped, more than 16 KiB in all or a 5th member fails, and past 1 KiB the members may not
/// expand more than 50 times the container.
inline unpack_limits small_limits() {
  unpack_limits l;
  l.max_total_bytes = uint64_t{16} * 1024;
  l.max_members = 4;
  l.max_ratio = 50;
  l.ratio_floor_bytes = 1024;
  l.max_member_bytes = uint64_t{4} * 1024;
  return l;
}

enum class reader : uint8_t { archive, mime };

/// The e-mail readers (GMime's, libgsf's for Outlook) keep the same properties.
inline reader reader_of(container_kind kind) {
  return is_mail(kind) ? reader::mime : reader::archive;
}

/// An archive member's path as the stage may keep it: relative (no leading slash or backslash,
/// no drive letter) and without a ".." component.
inline bool safe_path(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.front() == '\\')
    return false;
  if (name.size() >= 2 && name[1] == ':')
    return false;
  size_t start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i < name.size() && name[i] != '/' && name[i] != '\\')
      continue;
    if (name.substr(start, i - start) == "..")
      return false;
    start = i + 1;
  }
  return true;
}

/// An attachment's or a message's name: a file name, never a path.
inline bool plain_file_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".."
         && name.find_first_of("/\\") == std::string_view::npos;
}

/// The documented permanent errors each reader may answer for a kind it reads.
inline bool documented_error(std::string_view code, reader from) {
  if (code == "container.too_large" || code == "container.too_many_members"
      || code == "container.encrypted" || code == "container.corrupt")
    return true;
  return from == reader::archive && (code == "container.ratio" || code == "container.unsafe_path");
}

/// What holds for any answer to any input: an error is permanent with a documented code; the
/// members kept respect every limit and have safe names.
inline void check_answer(const result<unpacked>& r, const unpack_limits& limits, reader from) {
  if (!r) {
    FUZZ_CHECK(r.error().permanent());
    FUZZ_CHECK(documented_error(r.error().code, from));
    FUZZ_CHECK(!r.error().message.empty());
    return;
  }
  FUZZ_CHECK(r->members.size() <= static_cast<size_t>(limits.max_members));
  uint64_t total = 0;
  for (const auto& m : r->members) {
    FUZZ_CHECK(m.bytes.size() <= limits.max_member_bytes);
    total += m.bytes.size();
    if (from == reader::archive) {
      FUZZ_CHECK(safe_path(m.name));
    } else {
      FUZZ_CHECK(plain_file_name(m.name));
      FUZZ_CHECK(!m.bytes.empty());
    }
  }
  FUZZ_CHECK(total <= limits.max_total_bytes);
  for (const auto& p : r->problems)
    FUZZ_CHECK(!p.empty());
  if (from == reader::archive)
    FUZZ_CHECK(r->body_text.empty() && r->from.empty() && r->to.empty() && r->subject.empty()
               && r->date.empty());
}

inline bool same_answer(const result<unpacked>& a, const result<unpacked>& b) {
  if (a.ok() != b.ok())
    return false;
  if (!a)
    return a.error().code == b.error().code && a.error().message == b.error().message;
  if (a->members.size() != b->members.size())
    return false;
  for (size_t i = 0; i < a->members.size(); ++i)
    if (a->members[i].name != b->members[i].name || a->members[i].bytes != b->members[i].bytes)
      return false;
  return a->problems == b->problems && a->body_text == b->body_text && a->from == b->from
         && a->to == b->to && a->subject == b->subject && a->date == b->date;
}

/// Runs each job at once on the calling thread: the fuzzer's CPU pool.
class inline_cpu final : public cpu_executor {
public:
  void submit(cpu_job job) override { job.run(); }
};

struct staged_answer {
  container_kind kind;
  result<unpacked> answer;
};

/// The unpack stage's way: the kind detected from the bytes, then container_unpacker, which picks
/// the reader. nullopt when the bytes are no container, or an Outlook data file: libpst is not
/// fuzzed here (it runs only in the decoder helpers, which contain its faults; the detection
/// that leads to it is). The answer comes exactly once.
inline std::optional<staged_answer> unpack_like_the_stage(std::string_view bytes,
                                                          const unpack_limits& limits) {
  auto type = detect_container_type(bytes);
  if (!type || type->kind == container_kind::pst)
    return std::nullopt;
  inline_cpu cpu;
  container_unpacker stage{cpu, limits, std::chrono::seconds{60}};
  bool started = false;
  std::optional<result<unpacked>> answer;
  stage.unpack(unpack_request{std::string{bytes}, type->kind, [&] { started = true; }},
               [&](result<unpacked> r) {
                 FUZZ_CHECK(!answer);
                 answer.emplace(std::move(r));
               });
  FUZZ_CHECK(started && answer);
  return staged_answer{type->kind, std::move(*answer)};
}

/// What the stage does next with the members: each one that is a container again is taken apart
/// the same way (one level deep here) and its answer checked.
inline void unpack_members(const result<unpacked>& r, const unpack_limits& limits) {
  if (!r)
    return;
  for (const auto& m : r->members)
    if (auto inner = unpack_like_the_stage(m.bytes, limits))
      check_answer(inner->answer, limits, reader_of(inner->kind));
}

} // namespace ingestd::fuzz
