// The members of a container being taken apart, held against its limits as they come: every
// entry (a member, a body, a part that is not read) counts against containers.max_members and its
// bytes against max_total_bytes; a member over max_member_bytes, or empty, is skipped and named in
// the container's problems. Shared by the e-mail readers (mime_unpacker, msg_unpacker).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "adapters/containers/unpacker.hpp"

namespace ingestd {

class member_budget {
public:
  member_budget(const unpack_limits& limits, unpacked& out) : limits_(limits), out_(out) {}

  /// One more entry of `bytes` bytes held ("container.too_many_members", "container.too_large").
  result<void> count_entry(uint64_t bytes);
  /// A member offered: counted, then kept unless too large or empty.
  result<void> add(std::string name, std::string bytes);
  /// Members offered so far (default names are numbered by it).
  size_t count() const { return count_; }

private:
  const unpack_limits& limits_;
  unpacked& out_;
  size_t count_ = 0;
  size_t entries_ = 0;
  uint64_t total_ = 0;
};

/// The last component of an attachment's file name: a name, never a path ("" for "." or "..").
std::string member_file_name(std::string name);

} // namespace ingestd
