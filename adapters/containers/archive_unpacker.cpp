// ZIP, TAR, .tar.gz, 7z and RAR (1.5 to 5) read with libarchive from memory, member by member, with
// the limits checked while the bytes come out (a zip bomb stops at the limit, never fills the
// memory).
#include <archive.h>
#include <archive_entry.h>

#include <memory>
#include <string_view>

#include "adapters/containers/unpacker.hpp"

namespace ingestd {

namespace {

struct archive_closer {
  void operator()(archive* a) const { archive_read_free(a); }
};
using archive_ptr = std::unique_ptr<archive, archive_closer>;

error corrupt(archive* a, const std::string& where) {
  const char* why = archive_error_string(a);
  return error::make_permanent("container.corrupt",
                               where + ": " + (why != nullptr ? why : "unreadable archive"));
}

/// A hardlink's or a symlink's target, or empty.
std::string_view link_target(archive_entry* e) {
  const char* target = archive_entry_hardlink(e);
  if (target == nullptr)
    target = archive_entry_symlink(e);
  return target != nullptr ? std::string_view{target} : std::string_view{};
}

error too_many_members(const unpack_limits& limits) {
  return error::make_permanent("container.too_many_members",
                               "more than " + std::to_string(limits.max_members)
                                   + " members, directories and links counted "
                                     "(containers.max_members)");
}

/// The bytes read so far (`total`, of an archive of `archive_bytes`) against the total and the
/// ratio limits.
result<void> check_total(uint64_t total, size_t archive_bytes, const unpack_limits& limits) {
  if (total > limits.max_total_bytes)
    return error::make_permanent("container.too_large",
                                 "the members hold more than "
                                     + std::to_string(limits.max_total_bytes)
                                     + " bytes (containers.max_total_bytes)");
  if (total > limits.ratio_floor_bytes
      && static_cast<double>(total) > limits.max_ratio * static_cast<double>(archive_bytes))
    return error::make_permanent("container.ratio",
                                 "the members expand more than "
                                     + std::to_string(static_cast<int>(limits.max_ratio))
                                     + " times the archive's " + std::to_string(archive_bytes)
                                     + " bytes (containers.max_ratio): a compression bomb");
  return {};
}

std::string entry_name(archive_entry* e) {
  const char* utf8 = archive_entry_pathname_utf8(e);
  if (utf8 != nullptr)
    return utf8;
  const char* raw = archive_entry_pathname(e);
  return raw != nullptr ? raw : "";
}

} // namespace

result<void> check_member_path(std::string_view name) {
  auto unsafe = [&](const std::string& why) {
    return error::make_permanent("container.unsafe_path",
                                 "member \"" + std::string{name} + "\" " + why + ": refused");
  };
  if (name.empty())
    return unsafe("has no name");
  if (name.front() == '/' || name.front() == '\\')
    return unsafe("is an absolute path");
  if (name.size() >= 2 && name[1] == ':')
    return unsafe("names a drive");
  size_t pos = 0;
  while (pos <= name.size()) {
    auto end = name.find_first_of("/\\", pos);
    auto part
        = name.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (part == "..")
      return unsafe("climbs out of the archive (a \"..\" component)");
    if (end == std::string_view::npos)
      break;
    pos = end + 1;
  }
  return {};
}

result<unpacked> archive_unpacker::unpack(std::string_view bytes, container_kind kind,
                                          const unpack_limits& limits) const {
  archive_ptr a{archive_read_new()};
  if (!a)
    return error::make_transient("container.memory", "libarchive could not allocate a reader");
  switch (kind) {
  case container_kind::zip:
    archive_read_support_format_zip(a.get());
    break;
  case container_kind::tar:
    archive_read_support_format_tar(a.get());
    break;
  case container_kind::tar_gz:
    archive_read_support_filter_gzip(a.get());
    archive_read_support_format_tar(a.get());
    break;
  case container_kind::seven_zip:
    archive_read_support_format_7zip(a.get());
    break;
  case container_kind::rar:
    archive_read_support_format_rar(a.get());
    archive_read_support_format_rar5(a.get());
    break;
  default:
    return error::make_permanent("container.unsupported", "not an archive libarchive reads here");
  }
  if (archive_read_open_memory(a.get(), bytes.data(), bytes.size()) != ARCHIVE_OK)
    return corrupt(a.get(), "opening the archive");

  unpacked out;
  bool corrupted = false;
  uint64_t total = 0;
  int entries = 0;
  std::string buffer(size_t{64} * 1024, '\0');
  for (;;) {
    archive_entry* entry = nullptr;
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF)
      break;
    // ARCHIVE_RETRY (a damaged header, e.g. a tar checksum that does not match) leaves the entry
    // empty: a corrupt tail like ARCHIVE_FAILED and ARCHIVE_FATAL, never a member without a name.
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      // The members read so far are kept; the rest of the archive is lost.
      auto err = corrupt(a.get(), "after " + std::to_string(out.members.size()) + " members");
      if (out.members.empty() && out.problems.empty())
        return err;
      corrupted = true;
      out.problems.push_back(err.message);
      break;
    }
    auto name = entry_name(entry);
    if (auto safe = check_member_path(name); !safe)
      return safe.error();
    // Every entry counts against the limits, read or not: an archive of a million directories or
    // links costs the reader as much as one of a million files.
    if (++entries > limits.max_members)
      return too_many_members(limits);
    if (archive_entry_filetype(entry) != AE_IFREG || archive_entry_hardlink(entry) != nullptr) {
      // Directories, links, devices: nothing to ingest, but their names (and a link's target)
      // are bytes the archive expands to.
      total += name.size() + link_target(entry).size();
      if (auto r = check_total(total, bytes.size(), limits); !r)
        return r.error();
      continue;
    }
    if (archive_entry_is_encrypted(entry) != 0)
      return error::make_permanent("container.encrypted",
                                   "member \"" + name
                                       + "\" is encrypted; encrypted archives are not read");
    unpacked_member m{name, {}};
    bool too_big = false;
    bool broken = false;
    for (;;) {
      auto n = archive_read_data(a.get(), buffer.data(), buffer.size());
      if (n == 0)
        break;
      if (n < 0) {
        out.problems.push_back(corrupt(a.get(), "member \"" + name + "\"").message);
        broken = true;
        corrupted = true;
        break;
      }
      total += static_cast<uint64_t>(n);
      if (auto r = check_total(total, bytes.size(), limits); !r)
        return r.error();
      if (too_big)
        continue;
      if (m.bytes.size() + static_cast<size_t>(n) > limits.max_member_bytes) {
        too_big = true;
        m.bytes.clear();
        m.bytes.shrink_to_fit();
        continue;
      }
      m.bytes.append(buffer.data(), static_cast<size_t>(n));
    }
    if (broken)
      break; // a corrupt member: the reader cannot go on reliably after it
    if (too_big) {
      out.problems.push_back("member \"" + name + "\" is larger than "
                             + std::to_string(limits.max_member_bytes)
                             + " bytes (containers.max_member_bytes): skipped");
      continue;
    }
    out.members.push_back(std::move(m));
  }
  // Nothing readable at all: a failure, not an empty container.
  if (out.members.empty() && corrupted)
    return error::make_permanent("container.corrupt", out.problems.back());
  return out;
}

} // namespace ingestd
