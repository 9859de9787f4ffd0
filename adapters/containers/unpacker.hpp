// Containers taken apart: the unpacker interface, its limits and what it answers. The
// implementations are archive_unpacker (libarchive: ZIP, TAR, .tar.gz, 7z, RAR), mime_unpacker
// (GMime: an e-mail and its attachments, an mbox's messages) and msg_unpacker (libgsf: an Outlook
// message); container_unpacker runs the right one on the CPU pool for the unpack stage. No CAF and
// no database here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "messages/file_type.hpp"
#include "messages/result.hpp"

namespace ingestd {

class cpu_executor;

/// What one container may hold (config section `containers`). Exceeding any of the first four
/// fails the whole container with a permanent error and keeps nothing of it.
struct unpack_limits {
  /// The bytes of all members together; an entry that is not read (a directory, a link) counts
  /// its name and its link's target, an e-mail's body text its bytes.
  uint64_t max_total_bytes = uint64_t{256} << 20;
  /// Entries: the files of an archive and its directories, symlinks and hardlinks; an e-mail's
  /// MIME parts (attachments, attached messages, bodies, multipart nodes); an mbox's messages.
  int max_members = 1000;
  /// Total unpacked bytes per byte of the container, checked once past ratio_floor_bytes (a small
  /// archive of text may compress well without being a bomb).
  double max_ratio = 100;
  uint64_t ratio_floor_bytes = uint64_t{1} << 20;
  /// A member larger than this is skipped (its ingestion could not fetch it) and named in the
  /// parent's problems.
  uint64_t max_member_bytes = uint64_t{20} << 20;
};

/// One file taken out of a container.
struct unpacked_member {
  /// The member's path in the archive, or the attachment's file name.
  std::string name;
  std::string bytes;
};

/// What a container held.
struct unpacked {
  std::vector<unpacked_member> members;
  /// An e-mail's body as text (text/plain, else the text of text/html); empty for archives.
  std::string body_text;
  /// An e-mail's From, To, Subject and Date (empty for archives).
  std::string from, to, subject, date;
  /// What could not be read while the rest was kept (a corrupt archive's tail, a member too
  /// large), one sentence each, for the parent's unpack_error.
  std::vector<std::string> problems;
};

/// Errors (permanent): "container.too_large", "container.too_many_members",
/// "container.ratio" (a zip bomb), "container.unsafe_path" (an absolute member name or one
/// with a ".." component), "container.encrypted", "container.corrupt" (nothing readable),
/// "container.unsupported" (a kind the implementation does not read).
class unpacker {
public:
  virtual ~unpacker() = default;
  /// Blocking and CPU-bound: call it on a CPU worker.
  virtual result<unpacked> unpack(std::string_view bytes, container_kind kind,
                                  const unpack_limits& limits) const = 0;
};

/// ZIP, TAR, .tar.gz, 7z and RAR through libarchive.
class archive_unpacker final : public unpacker {
public:
  result<unpacked> unpack(std::string_view bytes, container_kind kind,
                          const unpack_limits& limits) const override;
};

/// An e-mail (RFC 822 with MIME attachments; attached messages become .eml members) or an mbox
/// (each message becomes an .eml member) through GMime.
class mime_unpacker final : public unpacker {
public:
  mime_unpacker();
  result<unpacked> unpack(std::string_view bytes, container_kind kind,
                          const unpack_limits& limits) const override;
};

/// An Outlook message (.msg, OLE2) through libgsf: its body, headers and attachments.
class msg_unpacker final : public unpacker {
public:
  msg_unpacker();
  result<unpacked> unpack(std::string_view bytes, container_kind kind,
                          const unpack_limits& limits) const override;
};

/// An Outlook data file (.pst or .ost) through libpst: each message an .eml member, named by its
/// folders ("Inbox/message-3.eml").
class pst_unpacker final : public unpacker {
public:
  pst_unpacker();
  result<unpacked> unpack(std::string_view bytes, container_kind kind,
                          const unpack_limits& limits) const override;
};

/// The reader of `kind`: archives, e-mails and mboxes, Outlook messages and data files.
const unpacker& unpacker_for(container_kind kind);

/// Whether `kind` is a mail container (its members are attachments, not paths).
constexpr bool is_mail(container_kind kind) {
  return kind == container_kind::eml || kind == container_kind::mbox || kind == container_kind::msg
         || kind == container_kind::pst;
}

/// The unpack stage's port: one container at a time on the CPU pool.
struct unpack_request {
  std::string bytes;
  container_kind kind = container_kind::zip;
  /// Called from the CPU worker when it starts (the step's deadline starts then).
  std::function<void()> started;
  /// Requested when the container's work is cancelled: the unpacking does not start, or its
  /// decoder helper is ended ("decode.cancelled").
  std::stop_token stop;
};

class container_unpacker {
public:
  /// `cpu` must outlive it.
  container_unpacker(cpu_executor& cpu, const unpack_limits& limits, std::chrono::seconds deadline);

  /// Answers from the CPU worker; "ocr.busy" (transient, never started) when no worker was free
  /// within the deadline; "decode.cancelled" when stopped.
  void unpack(unpack_request req, callback<unpacked> done);

  const unpack_limits& limits() const { return limits_; }

private:
  cpu_executor& cpu_;
  unpack_limits limits_;
  std::chrono::seconds deadline_;
};

/// The most memory unpacking a container of `container_bytes` holds: its bytes and its members'
/// bound under `limits` (an archive's max_total_bytes, or its max_ratio expansion when that is
/// less and over ratio_floor_bytes; an e-mail's or an mbox's max_total_bytes).
uint64_t unpack_memory_bound(const unpack_limits& limits, container_kind kind,
                             uint64_t container_bytes);

/// Checks a member's path: relative, no ".." component, no drive letter or backslash-rooted
/// name; an error naming it otherwise ("container.unsafe_path").
result<void> check_member_path(std::string_view name);

} // namespace ingestd
