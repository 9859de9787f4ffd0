// A folder of a mailbox on an IMAP server over TLS, through libcurl's IMAP: its messages listed by
// UID, each fetched whole, then moved to another folder once taken in, or flagged when refused so
// that it is not listed again; and, where the server has it, IMAP IDLE (RFC 2177) on a second
// connection, so that a reader learns of a new message when it arrives. Blocking, every call
// within its deadline; connections reused from call to call; one thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "messages/result.hpp"

namespace ingestd {

struct imap_settings {
  /// imaps://HOST[:PORT]/FOLDER (TLS from the start), or imap://HOST[:PORT]/FOLDER upgraded with
  /// STARTTLS (a server that refuses it is an error, never plain text).
  std::string url;
  std::string user;
  std::string password;
  /// Where a message goes once taken in; created when missing.
  std::string processed_folder = "Processed";
  /// PEM file of the authorities the server's certificate is checked against (empty: the
  /// system's).
  std::string ca_file;
  /// Each call's deadline, the connection and TLS handshake included.
  std::chrono::milliseconds timeout{30'000};
  /// A larger message is refused ("mailbox.too_large") without reading the rest.
  size_t max_message_bytes = 20u << 20;
};

/// Errors: "mailbox.unavailable" (transient: no connection, a timeout, the server went away),
/// "mailbox.login" (the server refused the credentials), "mailbox.tls" (its certificate or
/// STARTTLS), "mailbox.command" (the server answered NO or BAD), "mailbox.too_large" (permanent).
class imap_mailbox {
public:
  /// The keyword a refused message is flagged with.
  static constexpr std::string_view rejected_keyword = "$IngestdRejected";

  explicit imap_mailbox(imap_settings settings);
  ~imap_mailbox();
  imap_mailbox(const imap_mailbox&) = delete;
  imap_mailbox& operator=(const imap_mailbox&) = delete;

  /// Creates the processed folder unless the server has it.
  result<void> prepare();
  /// The UIDs of the folder's messages neither flagged refused nor deleted, ascending.
  result<std::vector<uint64_t>> waiting();
  /// The message's bytes; empty when it is no longer there (another reader moved it).
  result<std::string> fetch(uint64_t uid);
  /// Moves it to the processed folder (IMAP MOVE, RFC 6851).
  result<void> move_to_processed(uint64_t uid);
  /// Flags it with rejected_keyword: waiting() lists it no more.
  result<void> reject(uint64_t uid);

  struct idle_wait {
    /// The socket to wait on (readable: the server has news), or -1: the server has no IDLE, the
    /// caller polls the folder instead.
    int socket = -1;
    /// The server said the folder changed already, or the connection is new (it cannot tell what
    /// came since the caller last looked): no need to wait.
    bool news = false;
  };
  /// Starts IMAP IDLE on the folder (opened read-only), on a connection of its own: libcurl makes
  /// it (TLS, login), the IDLE exchange is this class's. Ended by idle_end().
  result<idle_wait> idle_begin();
  /// Ends IDLE: true when the server said the folder changed since idle_begin() (a message came
  /// or went). Nothing to do when idle_begin() did not start one.
  result<bool> idle_end();

  /// The folder's URL without credentials, for logs and a document's source.
  const std::string& where() const { return settings_.url; }

private:
  struct answer;
  result<answer> run(const std::string& url, const std::string& command, size_t max_bytes);
  result<answer> command(const std::string& text);

  imap_settings settings_;
  struct handle;
  std::unique_ptr<handle> curl_;
  struct idle_connection;
  std::unique_ptr<idle_connection> idle_;
};

/// The folder of an IMAP URL ("Scans In" of imaps://host/Scans%20In), decoded; "INBOX" when the
/// URL names none.
std::string imap_folder(const std::string& url);

/// Whether an untagged IMAP answer line says a folder changed ("* 3 EXISTS", "* 2 EXPUNGE",
/// "* 4 RECENT", "* 5 FETCH (FLAGS ...)").
bool imap_folder_changed(std::string_view line);

/// The numbers of an untagged "* SEARCH n n ..." answer, ascending.
std::vector<uint64_t> parse_search(std::string_view answer);

/// An IMAP quoted string of `text` ("a \"b\"" for a "b").
std::string imap_quoted(std::string_view text);

} // namespace ingestd
