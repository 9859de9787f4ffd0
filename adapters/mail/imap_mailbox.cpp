#include "adapters/mail/imap_mailbox.hpp"

#include <algorithm>
#include <charconv>

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

result<imap_mailbox::answer> imap_mailbox::run(const std::string& url, const std::string& command,
                                               size_t max_bytes) {
  CURL* c = curl_->easy;
  if (c == nullptr)
    return error::make_transient("mailbox.unavailable", "libcurl could not make a handle");
  answer a;
  sink s{&a.body, max_bytes};
  char detail[CURL_ERROR_SIZE] = {};
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_USERNAME, settings_.user.c_str());
  curl_easy_setopt(c, CURLOPT_PASSWORD, settings_.password.c_str());
  curl_easy_setopt(c, CURLOPT_USE_SSL, static_cast<long>(CURLUSESSL_ALL));
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "imap,imaps");
  if (!settings_.ca_file.empty())
    curl_easy_setopt(c, CURLOPT_CAINFO, settings_.ca_file.c_str());
  auto ms = static_cast<long>(settings_.timeout.count());
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
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
