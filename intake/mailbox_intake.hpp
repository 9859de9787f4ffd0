// Mailbox intake (acquisition.mailboxes): each pass reads the messages waiting in every
// configured mailbox folder and takes each in, through the intake service, as an e-mail document
// of the mailbox's tenant (the unpack stage makes its attachments child documents). A message is
// moved to the processed folder only after intake has committed its rows: a crash between the two
// reads it again at the next pass, and intake finds it by its Message-ID (its source key) or by
// its content, so it is taken in once. Nodes that read one mailbox take turns (a lock in the
// database for the pass), so that each message is also moved once. A message
// intake refuses for what it is (not an e-mail, too large) is flagged and left in the folder,
// named in the log. A server or database that fails ends that mailbox's pass; the next pass tries
// again. The node's periodic actor runs the passes.
#pragma once

#include <atomic>
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
  /// Each pass takes at most `batch_size` messages of each mailbox.
  mailbox_intake(std::shared_ptr<intake_service> intake, std::vector<mailbox> boxes,
                 int batch_size);
  ~mailbox_intake();
  mailbox_intake(const mailbox_intake&) = delete;
  mailbox_intake& operator=(const mailbox_intake&) = delete;

  /// One pass, logged: true when a mailbox has more waiting (the periodic actor's task).
  result<bool> pass();
  /// One pass, not logged.
  acquisition_report read();
  /// Ends a pass that runs after the item in hand, and every later one at once: the node is
  /// stopping (what is not read stays where it is for the next node). Thread-safe.
  void stop() { stopping_ = true; }

  /// Called after each message is dealt with, with its UID (a test stops the server there).
  std::function<void(uint64_t uid)> after_message;

private:
  struct reader;
  void read(reader& r, acquisition_report& report);
  result<intake_outcome> take_in(const reader& r, uint64_t uid, std::string bytes);

  std::shared_ptr<intake_service> intake_;
  std::vector<std::unique_ptr<reader>> readers_;
  int batch_;
  std::atomic<bool> stopping_{false};
};

/// The Message-ID of a message's header (without its angle brackets), or empty.
std::string message_id_of(std::string_view message);

} // namespace ingestd
