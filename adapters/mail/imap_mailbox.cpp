#include "adapters/mail/imap_mailbox.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <poll.h>

#include <curl/curl.h>

namespace ingestd {

struct imap_mailbox::handle {
  CURL* easy = curl_easy_init();
  ~handle() {
    if (easy != nullptr)
      curl_easy_cleanup(easy);
  }
};

struct imap_mailbox::answer {
  std::string body;
};

/// The IDLE connection: libcurl's, connected only (CURLOPT_CONNECT_ONLY: TLS and the login done),
/// then spoken to line by line.
struct imap_mailbox::idle_connection {
  using clock = std::chrono::steady_clock;
  /// A server line longer than this ends the connection (IDLE's lines are short).
  static constexpr size_t max_line = 64u << 10;

  CURL* easy = nullptr;
  curl_socket_t socket = CURL_SOCKET_BAD;
  std::string buffer;
  int tag = 0;
  int idle_tag = 0;
  /// False once the server said it has no IDLE.
  bool supported = true;
  bool idling = false;
  bool changed = false;
  std::string where;

  ~idle_connection() { close(); }
  void close() {
    if (easy != nullptr)
      curl_easy_cleanup(easy);
    easy = nullptr;
    socket = CURL_SOCKET_BAD;
    buffer.clear();
    idling = false;
  }

  error broken(const std::string& what) const {
    return error::make_transient("mailbox.unavailable", where + ": IDLE: " + what);
  }

  /// Waits until the socket is ready for `events`, within the deadline.
  result<void> ready(short events, clock::time_point deadline) const {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
      if (left.count() <= 0)
        return broken("no answer within the deadline");
      pollfd p{socket, events, 0};
      int n = ::poll(&p, 1, static_cast<int>(left.count()));
      if (n > 0)
        return {};
      if (n < 0 && errno != EINTR)
        return broken("poll failed");
    }
  }

  result<void> send(const std::string& text, clock::time_point deadline) const {
    size_t done = 0;
    while (done < text.size()) {
      size_t n = 0;
      auto rc = curl_easy_send(easy, text.data() + done, text.size() - done, &n);
      if (rc == CURLE_AGAIN) {
        if (auto r = ready(POLLOUT, deadline); !r)
          return r;
        continue;
      }
      if (rc != CURLE_OK)
        return broken(curl_easy_strerror(rc));
      done += n;
    }
    return {};
  }

  /// The next line the server sent, without its line end.
  result<std::string> line(clock::time_point deadline) {
    for (;;) {
      if (auto end = buffer.find('\n'); end != std::string::npos) {
        auto l = buffer.substr(0, end > 0 && buffer[end - 1] == '\r' ? end - 1 : end);
        buffer.erase(0, end + 1);
        return l;
      }
      if (buffer.size() > max_line)
        return broken("a line of more than " + std::to_string(max_line) + " bytes");
      char chunk[4096];
      size_t n = 0;
      auto rc = curl_easy_recv(easy, chunk, sizeof chunk, &n);
      if (rc == CURLE_AGAIN) {
        if (auto r = ready(POLLIN, deadline); !r)
          return r.error();
        continue;
      }
      if (rc != CURLE_OK)
        return broken(curl_easy_strerror(rc));
      if (n == 0)
        return broken("the server closed the connection");
      buffer.append(chunk, n);
    }
  }

  /// Reads up to the tagged answer of `t`: its untagged lines (news noted), or the server's NO or
  /// BAD as an error.
  result<std::vector<std::string>> until_tagged(int t, clock::time_point deadline) {
    std::vector<std::string> untagged;
    auto prefix = "i" + std::to_string(t) + " ";
    for (;;) {
      auto l = line(deadline);
      if (!l)
        return l.error();
      if (l->starts_with(prefix)) {
        auto status = std::string_view{*l}.substr(prefix.size());
        if (status == "OK" || status.starts_with("OK "))
          return untagged;
        return error::make_transient("mailbox.command", where + ": " + *l);
      }
      if (l->starts_with("* BYE"))
        return broken("the server ended the session: " + *l);
      changed = changed || imap_folder_changed(*l);
      untagged.push_back(std::move(*l));
    }
  }

  result<std::vector<std::string>> command(const std::string& text, clock::time_point deadline) {
    int t = ++tag;
    if (auto sent = send("i" + std::to_string(t) + " " + text + "\r\n", deadline); !sent)
      return sent.error();
    return until_tagged(t, deadline);
  }
};

namespace {

struct sink {
  std::string* out;
  size_t max;
  bool too_large = false;
};

size_t on_data(char* data, size_t size, size_t count, void* user) {
  auto* s = static_cast<sink*>(user);
  size_t n = size * count;
  if (s->out->size() + n > s->max) {
    s->too_large = true;
    return 0; // aborts the transfer
  }
  s->out->append(data, n);
  return n;
}

/// What both connections set: the URL, the login, TLS required and checked, the deadlines.
void connection_options(CURL* c, const imap_settings& s, const std::string& url, char* detail) {
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_USERNAME, s.user.c_str());
  curl_easy_setopt(c, CURLOPT_PASSWORD, s.password.c_str());
  curl_easy_setopt(c, CURLOPT_USE_SSL, static_cast<long>(CURLUSESSL_ALL));
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "imap,imaps");
  if (!s.ca_file.empty())
    curl_easy_setopt(c, CURLOPT_CAINFO, s.ca_file.c_str());
  auto ms = static_cast<long>(s.timeout.count());
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
}

/// The server's root URL (scheme, host and port) of a folder's URL.
std::string server_root(const std::string& url) {
  auto scheme = url.find("://");
  auto slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return slash == std::string::npos ? url + "/" : url.substr(0, slash + 1);
}

error failure(CURLcode code, const char* detail, const std::string& where, bool too_large,
              size_t max) {
  std::string what = where + ": " + (detail[0] != '\0' ? detail : curl_easy_strerror(code));
  switch (code) {
  case CURLE_LOGIN_DENIED:
    return error::make_permanent("mailbox.login", std::move(what));
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_USE_SSL_FAILED:
    return error::make_permanent("mailbox.tls", std::move(what));
  case CURLE_QUOTE_ERROR:
    return error::make_permanent("mailbox.command", std::move(what));
  case CURLE_WRITE_ERROR:
    if (too_large)
      return error::make_permanent("mailbox.too_large", where + ": the message is larger than "
                                                            + std::to_string(max) + " bytes");
    [[fallthrough]];
  default:
    return error::make_transient("mailbox.unavailable", std::move(what));
  }
}

} // namespace

std::vector<uint64_t> parse_search(std::string_view answer) {
  std::vector<uint64_t> out;
  size_t pos = 0;
  while (pos < answer.size()) {
    auto end = answer.find('\n', pos);
    auto line = answer.substr(pos, end == std::string_view::npos ? answer.npos : end - pos);
    pos = end == std::string_view::npos ? answer.size() : end + 1;
    constexpr std::string_view prefix = "* SEARCH";
    if (line.substr(0, prefix.size()) != prefix)
      continue;
    line.remove_prefix(prefix.size());
    while (!line.empty()) {
      auto start = line.find_first_not_of(" \r");
      if (start == std::string_view::npos)
        break;
      line.remove_prefix(start);
      uint64_t uid = 0;
      auto [rest, ec] = std::from_chars(line.data(), line.data() + line.size(), uid);
      if (ec != std::errc{} || uid == 0)
        break;
      out.push_back(uid);
      line.remove_prefix(static_cast<size_t>(rest - line.data()));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string imap_folder(const std::string& url) {
  auto scheme = url.find("://");
  auto slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (slash == std::string::npos || slash + 1 >= url.size())
    return "INBOX";
  auto path = url.substr(slash + 1);
  if (auto params = path.find(';'); params != std::string::npos)
    path.resize(params);
  int length = 0;
  char* decoded = curl_easy_unescape(nullptr, path.c_str(), static_cast<int>(path.size()), &length);
  if (decoded == nullptr)
    return path;
  std::string out{decoded, static_cast<size_t>(length)};
  curl_free(decoded);
  return out.empty() ? "INBOX" : out;
}

bool imap_folder_changed(std::string_view line) {
  if (!line.starts_with("* "))
    return false;
  line.remove_prefix(2);
  auto space = line.find(' ');
  if (space == 0 || space == std::string_view::npos)
    return false;
  for (char c : line.substr(0, space))
    if (c < '0' || c > '9')
      return false;
  auto what = line.substr(space + 1);
  for (std::string_view word : {"EXISTS", "EXPUNGE", "RECENT", "FETCH"})
    if (what.starts_with(word) && (what.size() == word.size() || what[word.size()] == ' '))
      return true;
  return false;
}

std::string imap_quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out.push_back('\\');
    if (c != '\r' && c != '\n')
      out.push_back(c);
  }
  out.push_back('"');
  return out;
}

imap_mailbox::imap_mailbox(imap_settings settings)
    : settings_(std::move(settings)), curl_(std::make_unique<handle>()) {}

imap_mailbox::~imap_mailbox() = default;

result<imap_mailbox::idle_wait> imap_mailbox::idle_begin() {
  if (!idle_)
    idle_ = std::make_unique<idle_connection>();
  auto& c = *idle_;
  c.where = settings_.url;
  if (!c.supported)
    return idle_wait{};
  if (c.idling)
    return idle_wait{static_cast<int>(c.socket), c.changed};
  auto deadline = idle_connection::clock::now() + settings_.timeout;
  auto fail = [&c](error e) -> result<idle_wait> {
    c.close();
    return e;
  };
  // A new connection sees the folder as it is now, not what came since the caller last looked:
  // its first wait says there is news, so that the caller looks once more.
  bool fresh = c.easy == nullptr;
  if (c.easy == nullptr) {
    c.easy = curl_easy_init();
    if (c.easy == nullptr)
      return error::make_transient("mailbox.unavailable", "libcurl could not make a handle");
    char detail[CURL_ERROR_SIZE] = {};
    connection_options(c.easy, settings_, server_root(settings_.url), detail);
    curl_easy_setopt(c.easy, CURLOPT_CONNECT_ONLY, 1L);
    if (auto code = curl_easy_perform(c.easy); code != CURLE_OK)
      return fail(failure(code, detail, settings_.url, false, 0));
    curl_easy_setopt(c.easy, CURLOPT_ERRORBUFFER, nullptr);
    if (curl_easy_getinfo(c.easy, CURLINFO_ACTIVESOCKET, &c.socket) != CURLE_OK
        || c.socket == CURL_SOCKET_BAD)
      return fail(c.broken("no socket"));
    auto caps = c.command("CAPABILITY", deadline);
    if (!caps)
      return fail(caps.error());
    bool has_idle = false;
    for (const auto& l : *caps)
      has_idle
          = has_idle
            || (l.starts_with("* CAPABILITY ") && (l + " ").find(" IDLE ") != std::string::npos);
    if (!has_idle) {
      c.supported = false;
      c.close();
      return idle_wait{};
    }
    // Read-only: the reader's own connection moves and flags the messages.
    if (auto opened = c.command("EXAMINE " + imap_quoted(imap_folder(settings_.url)), deadline);
        !opened)
      return fail(opened.error());
  }
  c.changed = false;
  c.idle_tag = ++c.tag;
  if (auto sent = c.send("i" + std::to_string(c.idle_tag) + " IDLE\r\n", deadline); !sent)
    return fail(sent.error());
  for (;;) {
    auto l = c.line(deadline);
    if (!l)
      return fail(l.error());
    if (l->starts_with("+"))
      break;
    if (l->starts_with("i" + std::to_string(c.idle_tag) + " "))
      return fail(
          error::make_transient("mailbox.command", settings_.url + ": IDLE refused: " + *l));
    c.changed = c.changed || imap_folder_changed(*l);
  }
  c.idling = true;
  // Lines that came with the continuation are the server's news already.
  return idle_wait{static_cast<int>(c.socket), fresh || c.changed || !c.buffer.empty()};
}

result<bool> imap_mailbox::idle_end() {
  if (!idle_ || !idle_->idling)
    return false;
  auto& c = *idle_;
  c.idling = false;
  auto deadline = idle_connection::clock::now() + settings_.timeout;
  if (auto sent = c.send("DONE\r\n", deadline); !sent) {
    c.close();
    return sent.error();
  }
  if (auto done = c.until_tagged(c.idle_tag, deadline); !done) {
    c.close();
    return done.error();
  }
  return c.changed;
}

result<imap_mailbox::answer> imap_mailbox::run(const std::string& url, const std::string& command,
                                               size_t max_bytes) {
  CURL* c = curl_->easy;
  if (c == nullptr)
    return error::make_transient("mailbox.unavailable", "libcurl could not make a handle");
  answer a;
  sink s{&a.body, max_bytes};
  char detail[CURL_ERROR_SIZE] = {};
  curl_easy_reset(c);
  connection_options(c, settings_, url, detail);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(settings_.timeout.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
  if (!command.empty())
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, command.c_str());
  auto code = curl_easy_perform(c);
  if (code != CURLE_OK)
    return failure(code, detail, settings_.url, s.too_large, max_bytes);
  return a;
}

result<imap_mailbox::answer> imap_mailbox::command(const std::string& text) {
  // Untagged answers of a command are short; a SEARCH of a large folder is the longest.
  return run(settings_.url, text, size_t{16} << 20);
}

result<void> imap_mailbox::prepare() {
  auto exists = [this]() -> result<bool> {
    auto listed = run(server_root(settings_.url),
                      "LIST \"\" " + imap_quoted(settings_.processed_folder), size_t{1} << 20);
    if (!listed)
      return listed.error();
    return listed->body.find("* LIST") != std::string::npos;
  };
  auto there = exists();
  if (!there || *there)
    return there ? result<void>{} : result<void>{there.error()};
  auto created = run(server_root(settings_.url),
                     "CREATE " + imap_quoted(settings_.processed_folder), size_t{1} << 20);
  if (created)
    return {};
  // Another reader of the mailbox (another node) may have created it meanwhile: the server then
  // refuses the CREATE, and the folder is there all the same.
  if (auto now = exists(); now && *now)
    return {};
  return created.error();
}

result<std::vector<uint64_t>> imap_mailbox::waiting() {
  // A connection kept from an earlier call has the folder selected as it was then: NOOP brings
  // what arrived since into its view, so that the search sees it.
  if (auto synced = command("NOOP"); !synced)
    return synced.error();
  auto a = command("UID SEARCH UNDELETED UNKEYWORD " + std::string{rejected_keyword});
  if (!a)
    return a.error();
  return parse_search(a->body);
}

result<std::string> imap_mailbox::fetch(uint64_t uid) {
  auto url = settings_.url;
  if (url.empty() || url.back() != '/')
    url.push_back('/');
  url.append(";UID=").append(std::to_string(uid));
  auto a = run(url, "", settings_.max_message_bytes);
  if (!a)
    return a.error();
  return std::move(a->body);
}

result<void> imap_mailbox::move_to_processed(uint64_t uid) {
  auto a
      = command("UID MOVE " + std::to_string(uid) + " " + imap_quoted(settings_.processed_folder));
  if (!a)
    return a.error();
  return {};
}

result<void> imap_mailbox::reject(uint64_t uid) {
  auto a = command("UID STORE " + std::to_string(uid) + " +FLAGS (" + std::string{rejected_keyword}
                   + ")");
  if (!a)
    return a.error();
  return {};
}

} // namespace ingestd
