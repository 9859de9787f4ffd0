// A Dovecot IMAP server of the test's own on loopback: TLS only (imaps, a certificate made for it
// by openssl, so clients check it against ca_file()), one user whose mail is a maildir under the
// test's temp dir, started and stopped by the test (a server that goes away and comes back on the
// same port). Messages go in and are looked at with the curl command line, as a mail client
// would. Needs root (Dovecot drops to its own users) and Debian's dovecot-imapd.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ingestd::test {

class dovecot_server {
public:
  /// Started; throws when it does not listen within 30 s.
  dovecot_server();
  /// Stopped, its directory removed.
  ~dovecot_server();
  dovecot_server(const dovecot_server&) = delete;
  dovecot_server& operator=(const dovecot_server&) = delete;

  /// Stops it, the master and its sessions at once (SIGKILL to its process group), and waits
  /// until they are gone.
  void stop();
  /// Starts it again on the same port and waits until it listens.
  void start();

  /// imaps://127.0.0.1:PORT/FOLDER
  std::string url(const std::string& folder) const;
  const std::string& user() const { return user_; }
  const std::string& password() const { return password_; }
  /// The certificate the server presents (PEM), the one authority a client must trust.
  std::string ca_file() const;

  /// Appends `message` to `folder` (IMAP APPEND).
  void append(const std::string& folder, const std::string& message);
  /// The UIDs in `folder` that match an IMAP search ("ALL", "KEYWORD $IngestdRejected").
  std::vector<uint64_t> search(const std::string& folder, const std::string& criteria = "ALL");
  /// Creates `folder`.
  void create(const std::string& folder);

private:
  std::string curl(const std::string& url, const std::string& options);

  std::string dir_;
  std::string user_ = "billing";
  std::string password_ = "mailbox-secret";
  int port_ = 0;
  int pid_ = -1;
};

} // namespace ingestd::test
