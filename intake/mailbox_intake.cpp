#include "intake/mailbox_intake.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "adapters/support/log.hpp"
#include "intake/intake_service.hpp"

namespace ingestd {

/// A mailbox with its connection, kept from pass to pass.
struct mailbox_intake::reader {
  mailbox box;
  imap_mailbox imap;
  /// The processed folder exists (prepare() succeeded once).
  bool prepared = false;

  explicit reader(mailbox b) : box(std::move(b)), imap(box.imap) {}
};

namespace {

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x))
                  == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

} // namespace

std::string message_id_of(std::string_view message) {
  // The header ends at the first empty line; only its first 256 KiB are read.
  auto header = message.substr(0, size_t{256} << 10);
  size_t pos = 0;
  while (pos < header.size()) {
    auto end = header.find('\n', pos);
    if (end == std::string_view::npos)
      end = header.size();
    auto line = header.substr(pos, end - pos);
    pos = end + 1;
    if (trimmed(line).empty())
      break;
    auto colon = line.find(':');
    if (colon == std::string_view::npos || line.front() == ' ' || line.front() == '\t'
        || !same_name(trimmed(line.substr(0, colon)), "message-id"))
      continue;
    std::string value{line.substr(colon + 1)};
    // Folded onto the lines that follow (each starting with a space or a tab).
    while (pos < header.size() && (header[pos] == ' ' || header[pos] == '\t')) {
      auto next = header.find('\n', pos);
      if (next == std::string_view::npos)
        next = header.size();
      value.append(header.substr(pos, next - pos));
      pos = next + 1;
    }
    auto id = trimmed(value);
    auto open = id.find('<');
    auto close = id.find('>', open == std::string_view::npos ? 0 : open);
    if (open != std::string_view::npos && close != std::string_view::npos)
      id = id.substr(open + 1, close - open - 1);
    id = trimmed(id);
    if (id.size() > 998)
      return {};
    return std::string{id};
  }
  return {};
}

mailbox_intake::mailbox_intake(std::shared_ptr<intake_service> intake, std::vector<mailbox> boxes,
                               int batch_size, std::chrono::milliseconds idle_wait)
    : intake_(std::move(intake)), batch_(std::max(batch_size, 1)), idle_wait_(idle_wait),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  for (auto& b : boxes) {
    b.imap.max_message_bytes = std::min(b.imap.max_message_bytes, intake_->options().max_bytes);
    readers_.push_back(std::make_unique<reader>(std::move(b)));
  }
}

mailbox_intake::~mailbox_intake() {
  if (wake_fd_ >= 0)
    ::close(wake_fd_);
}

void mailbox_intake::stop() {
  stopping_ = true;
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  }
}

result<bool> mailbox_intake::pass() {
  auto r = read();
  log_pass("mailboxes read", r);
  if (r.more || stopping_ || idle_wait_ <= std::chrono::milliseconds::zero())
    return r.more;
  return wait_for_mail();
}

bool mailbox_intake::wait_for_mail() {
  std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
  bool news = false;
  for (auto& r : readers_) {
    auto w = r->imap.idle_begin();
    if (!w) {
      log::warn("mailbox IDLE failed: polled instead",
                {{"mailbox", r->imap.where()}, {"error", w.error().describe()}});
      continue;
    }
    if (w->socket < 0)
      continue;
    fds.push_back({w->socket, POLLIN, 0});
    news = news || w->news;
  }
  if (fds.size() == 1)
    return false; // no server has IDLE: the periodic actor's interval applies
  auto until = std::chrono::steady_clock::now() + idle_wait_;
  while (!news && !stopping_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      break;
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (n > 0)
      break; // news, or stop()
    if (n < 0 && errno != EINTR)
      break;
  }
  for (auto& r : readers_)
    if (auto ended = r->imap.idle_end(); !ended)
      log::warn("mailbox IDLE failed: polled instead",
                {{"mailbox", r->imap.where()}, {"error", ended.error().describe()}});
  return true;
}

acquisition_report mailbox_intake::read() {
  acquisition_report report;
  for (auto& r : readers_)
    if (!stopping_)
      read(*r, report);
  return report;
}

result<intake_outcome> mailbox_intake::take_in(const reader& r, uint64_t uid, std::string bytes) {
  intake_item item;
  item.tenant_id = r.box.tenant_id;
  item.source.uploaded_by = uuid{};
  item.channel = "imap";
  item.name = "message-" + std::to_string(uid) + ".eml";
  item.metadata = {{"mailbox", r.imap.where()}, {"uid", std::to_string(uid)}};
  if (auto id = message_id_of(bytes); !id.empty()) {
    item.metadata.emplace_back("message_id", id);
    item.source_key = "message-id:" + id;
  }
  item.bytes = std::move(bytes);
  return intake_->submit(item);
}

void mailbox_intake::read(reader& r, acquisition_report& report) {
  const auto& where = r.imap.where();
  auto failed = [&](const error& e, std::string_view doing) {
    ++report.failed;
    log::warn("mailbox not read",
              {{"mailbox", where}, {"while", std::string{doing}}, {"error", e.describe()}});
  };
  if (!r.prepared) {
    if (auto ok = r.imap.prepare(); !ok)
      return failed(ok.error(), "creating the processed folder");
    r.prepared = true;
  }
  // The readers of one mailbox (on other nodes) take turns: each message is moved once.
  auto turn = intake_->take_turn(r.box.tenant_id, "mailbox:" + r.box.imap.user + "@" + where);
  if (!turn)
    return failed(turn.error(), "waiting for the mailbox's other reader");
  auto waiting = r.imap.waiting();
  if (!waiting)
    return failed(waiting.error(), "listing the folder");
  if (static_cast<int>(waiting->size()) > batch_) {
    waiting->resize(static_cast<size_t>(batch_));
    report.more = true;
  }
  for (auto uid : *waiting) {
    if (stopping_) {
      report.more = false;
      return;
    }
    auto bytes = r.imap.fetch(uid);
    if (!bytes && bytes.error().transient())
      return failed(bytes.error(), "fetching a message");
    if (bytes && bytes->empty())
      continue; // moved meanwhile (another node took it)
    auto taken = bytes ? take_in(r, uid, std::move(*bytes)) : result<intake_outcome>{bytes.error()};
    if (!taken) {
      if (taken.error().transient())
        return failed(taken.error(), "taking a message in");
      // Refused for what it is: flagged, so that it is not read again, and left in the folder.
      log::warn("mailbox message refused", {{"mailbox", where},
                                            {"uid", static_cast<int64_t>(uid)},
                                            {"error", taken.error().describe()}});
      if (auto flagged = r.imap.reject(uid); !flagged)
        return failed(flagged.error(), "flagging a refused message");
      ++report.refused;
    } else {
      // Its rows are committed: now it may leave the folder.
      if (auto moved = r.imap.move_to_processed(uid); !moved)
        return failed(moved.error(), "moving a message to the processed folder");
      ++(taken->status == intake_status::duplicate ? report.duplicates : report.taken);
      log::info("mailbox message taken in", {{"mailbox", where},
                                             {"uid", static_cast<int64_t>(uid)},
                                             {"status", std::string{to_string(taken->status)}},
                                             {"document_id", taken->document_id.str()},
                                             {"ingestion_id", taken->ingestion_id.str()}});
    }
    if (after_message)
      after_message(uid);
  }
}

} // namespace ingestd
