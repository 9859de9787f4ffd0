#include "tests/support/imap/dovecot_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "adapters/mail/imap_mailbox.hpp"
#include "tests/support/environment.hpp"

namespace ingestd::test {

namespace {

bool listening(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string shell_quoted(const std::string& s) {
  return "'" + s + "'";
}

} // namespace

dovecot_server::dovecot_server() : dir_(make_temp_dir("ingestd-imap")), port_(free_tcp_port()) {
  namespace fs = std::filesystem;
  for (const char* sub : {"run", "state", "home"})
    fs::create_directories(fs::path{dir_} / sub);
  auto made
      = run_shell("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
                  " -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1,DNS:localhost"
                  " -keyout "
                  + shell_quoted(dir_ + "/key.pem") + " -out " + shell_quoted(dir_ + "/cert.pem"));
  if (made.code != 0)
    throw std::runtime_error("openssl could not make the certificate: " + made.output);
  write_file(dir_ + "/users", user_ + ":{PLAIN}" + password_ + "\n");
  // The mail processes run as nobody, in homes it owns.
  if (auto owned = run_shell("chown nobody:nogroup " + shell_quoted(dir_ + "/home"));
      owned.code != 0)
    throw std::runtime_error("cannot give the mail homes to nobody: " + owned.output);
  // DIR and PORT stand for the directory and the port.
  std::string conf = R"(base_dir = DIR/run
state_dir = DIR/state
log_path = DIR/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = required
ssl_cert = <DIR/cert.pem
ssl_key = <DIR/key.pem
first_valid_uid = 1
mail_location = maildir:~/Maildir
auth_mechanisms = plain
auth_failure_delay = 0
service imap-login {
  inet_listener imap {
    port = 0
  }
  inet_listener imaps {
    port = PORT
    ssl = yes
  }
}
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u DIR/users
}
userdb {
  driver = static
  args = uid=nobody gid=nogroup home=DIR/home/%u
}
)";
  for (auto at = conf.find("DIR"); at != std::string::npos; at = conf.find("DIR", at))
    conf.replace(at, 3, dir_);
  conf.replace(conf.find("PORT"), 4, std::to_string(port_));
  write_file(dir_ + "/dovecot.conf", conf);
  start();
}

dovecot_server::~dovecot_server() {
  stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void dovecot_server::start() {
  if (pid_ > 0)
    return;
  auto conf = dir_ + "/dovecot.conf";
  pid_ = ::fork();
  if (pid_ < 0)
    throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // A process group of its own: stop() ends the master and its sessions together.
    ::setpgid(0, 0);
    ::execlp("dovecot", "dovecot", "-F", "-c", conf.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  while (!listening(port_)) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("dovecot exited at start: "
                               + run_shell("cat " + shell_quoted(dir_ + "/dovecot.log")).output);
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("dovecot did not listen within 30 s");
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
}

void dovecot_server::stop() {
  if (pid_ <= 0)
    return;
  // The master and every session it started: the server goes away, connections and all.
  ::kill(-pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  while (::kill(-pid_, 0) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  pid_ = -1;
}

std::string dovecot_server::url(const std::string& folder) const {
  return "imaps://127.0.0.1:" + std::to_string(port_) + "/" + folder;
}

std::string dovecot_server::ca_file() const {
  return dir_ + "/cert.pem";
}

std::string dovecot_server::curl(const std::string& url, const std::string& options) {
  auto r = run_shell("curl -sS --max-time 30 --cacert " + shell_quoted(ca_file()) + " -u "
                     + shell_quoted(user_ + ":" + password_) + " " + options + " "
                     + shell_quoted(url));
  if (r.code != 0)
    throw std::runtime_error("curl " + options + " " + url + ": " + r.output);
  return r.output;
}

void dovecot_server::append(const std::string& folder, const std::string& message) {
  auto file = dir_ + "/append.eml";
  write_file(file, message);
  curl(url(folder), "-T " + shell_quoted(file));
}

std::vector<uint64_t> dovecot_server::search(const std::string& folder,
                                             const std::string& criteria) {
  return parse_search(curl(url(folder), "-X " + shell_quoted("UID SEARCH " + criteria)));
}

void dovecot_server::create(const std::string& folder) {
  curl(url(""), "-X " + shell_quoted("CREATE " + imap_quoted(folder)));
}

} // namespace ingestd::test
