// Mailbox intake (acquisition.mailboxes): each pass reads the messages waiting in every
// configured mailbox folder and takes each in, through the intake service, as an e-mail document
// of the mailbox's tenant (the unpack stage makes its attachments child documents). A message is
// moved to the processed folder only after intake has committed its rows: a crash between the two
// reads it again at the next pass, and intake finds it by its Message-ID (its source key) or by
// its content, so it is taken in once. Nodes that read one mailbox take turns (a lock in the
// database for the pass), so that each message is also moved once. A message
// intake refuses for what it is (not an e-mail, too large) is flagged and left in the folder,
// named in the log. A server or database that fails ends that mailbox's pass; the next pass tries
// again. The node's periodic actor runs the passes. Between passes, where the servers have IMAP
// IDLE, a pass waits on all its mailboxes at once until one says a message came (or the poll
// interval passed), so that a message is read when it arrives rather than at the next poll.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/mail/imap_mailbox.hpp"
#include "intake/acquisition.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

class intake_service;
struct intake_outcome;

struct mailbox {
  uuid tenant_id;
  imap_settings imap;
};

class mailbox_intake {
public:
  /// Each pass takes at most `batch_size` messages of each mailbox. With an `idle_wait`, a pass
  /// that leaves nothing waiting then waits up to that long in IMAP IDLE (servers without IDLE
  /// are polled at the periodic actor's interval).
  mailbox_intake(std::shared_ptr<intake_service> intake, std::vector<mailbox> boxes, int batch_size,
                 std::chrono::milliseconds idle_wait = std::chrono::milliseconds::zero());
  ~mailbox_intake();
  mailbox_intake(const mailbox_intake&) = delete;
  mailbox_intake& operator=(const mailbox_intake&) = delete;

  /// One pass, logged, then the IDLE wait: true when the next pass is due at once (a mailbox has
  /// more waiting, a server said a message came, or the wait ran its time).
  result<bool> pass();
  /// Waits in IMAP IDLE on every mailbox whose server has it, until one has news, `idle_wait`
  /// passes or the intake stops: true when it waited, false when no server has IDLE.
  bool wait_for_mail();
  /// One pass, not logged.
  acquisition_report read();
  /// Ends a pass that runs after the item in hand, and every later one at once: the node is
  /// stopping (what is not read stays where it is for the next node); an IDLE wait ends at once.
  /// Thread-safe.
  void stop();

  /// Called after each message is dealt with, with its UID (a test stops the server there).
  std::function<void(uint64_t uid)> after_message;

private:
  struct reader;
  void read(reader& r, acquisition_report& report);
  result<intake_outcome> take_in(const reader& r, uint64_t uid, std::string bytes);

  std::shared_ptr<intake_service> intake_;
  std::vector<std::unique_ptr<reader>> readers_;
  int batch_;
  std::chrono::milliseconds idle_wait_;
  /// Written by stop(): wakes an IDLE wait.
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
};

/// The Message-ID of a message's header (without its angle brackets), or empty.
std::string message_id_of(std::string_view message);

} // namespace ingestd
