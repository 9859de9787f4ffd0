// The curl-multi HTTP engine (see curl_engine.hpp): one thread owns the libcurl multi handles
// (lanes) and every easy handle; other threads only touch a mutex-protected inbox and wake the
// thread.
#include "adapters/http/curl_engine.hpp"
#include "adapters/support/log.hpp"
#include "adapters/support/thread_name.hpp"
#include "messages/error_codes.hpp"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace ingestd {

namespace {

struct lane;

/// One request while the engine owns it. Heap-allocated and never moved: curl keeps pointers to
/// the body, the error buffer and the transfer itself.
struct transfer {
  uint64_t id = 0;
  http_request request;
  callback<http_response> done;
  CURL* easy = nullptr;
  /// The multi handle carrying it, once started.
  lane* owner = nullptr;
  curl_slist* headers = nullptr;
  http_response response;
  bool too_large = false;
  char error_buffer[CURL_ERROR_SIZE] = {};

  ~transfer() {
    if (easy != nullptr)
      curl_easy_cleanup(easy);
    if (headers != nullptr)
      curl_slist_free_all(headers);
  }
};

char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i]))
      return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty()
         && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  size_t n = size * count;
  if (t->response.body.size() + n > t->request.max_response_bytes) {
    t->too_large = true;
    return 0; // aborts the transfer with CURLE_WRITE_ERROR
  }
  t->response.body.append(data, n);
  return n;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  size_t n = size * count;
  std::string_view line(data, n);
  if (line.starts_with("HTTP/")) {
    // A new status line (after a 100 Continue or an interim response): keep only the final
    // response's headers.
    t->response.headers.clear();
    return n;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0)
    return n; // the blank line ending the block, or an obsolete folded line
  std::string name(trim(line.substr(0, colon)));
  for (auto& c : name)
    c = ascii_lower(c);
  t->response.headers.emplace_back(std::move(name), std::string(trim(line.substr(colon + 1))));
  return n;
}

error classify(CURLcode code, const transfer& t) {
  std::string detail = t.error_buffer[0] != '\0' ? std::string(t.error_buffer)
                                                 : std::string(curl_easy_strerror(code));
  std::string what = t.request.method + " " + t.request.url + ": " + detail;
  switch (code) {
  case CURLE_OPERATION_TIMEDOUT:
    return error::make_transient("http.timeout", std::move(what));
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
    return error::make_transient("http.connect", std::move(what));
  case CURLE_FILESIZE_EXCEEDED:
    return error::make_permanent(errc::http_too_large,
                                 what + " (limit " + std::to_string(t.request.max_response_bytes)
                                     + " bytes)");
  case CURLE_WRITE_ERROR:
    if (t.too_large)
      return error::make_permanent(
          errc::http_too_large, t.request.method + " " + t.request.url + ": response larger than "
                                    + std::to_string(t.request.max_response_bytes) + " bytes");
    return error::make_transient("http.transport", std::move(what));
  case CURLE_SSL_CONNECT_ERROR:
    // The handshake failed part way: usually the network (a reset), so worth a retry.
    return error::make_transient("http.tls", std::move(what));
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS:
  case CURLE_SSL_CRL_BADFILE:
  case CURLE_SSL_ENGINE_NOTFOUND:
  case CURLE_SSL_ENGINE_SETFAILED:
  case CURLE_SSL_ENGINE_INITFAILED:
  case CURLE_USE_SSL_FAILED:
    return error::make_permanent("http.tls", std::move(what));
  case CURLE_URL_MALFORMAT:
  case CURLE_UNSUPPORTED_PROTOCOL:
    return error::make_permanent("http.invalid_url", std::move(what));
  default:
    return error::make_transient("http.transport", std::move(what));
  }
}

std::once_flag global_init_once;

/// One curl multi handle with its own connection cache and timer (see curl_engine_options::lanes).
struct lane {
  void* engine = nullptr;
  uint32_t index = 0;
  CURLM* multi = nullptr;
  /// curl's next timeout for this handle; nullopt when curl wants none.
  std::optional<std::chrono::steady_clock::time_point> timer;
  size_t active = 0;
};

/// epoll's user data for a socket: the lane in the high half, the descriptor in the low half.
uint64_t socket_key(const lane& l, curl_socket_t fd) {
  return (static_cast<uint64_t>(l.index) << 32) | static_cast<uint32_t>(fd);
}
constexpr uint64_t wake_key = ~uint64_t{0};

} // namespace

// The event loop uses curl's socket interface (curl_multi_socket_action) on an epoll set rather
// than curl_multi_perform/curl_multi_poll: the latter walk every transfer on each wake-up, which is
// quadratic with thousands in flight; this costs per event instead. An eventfd in the same epoll
// set plays the role of curl_multi_wakeup for submit() and cancel().
struct curl_engine::impl {
  curl_engine_options options;
  std::vector<std::unique_ptr<lane>> lanes;
  /// Plain http requests go to the lanes before `http_lanes_end`, https ones to those from
  /// `https_lanes_begin` on (with their connection bound per host). Every lane takes both when
  /// https has no lanes of its own.
  size_t http_lanes_end = 0;
  size_t https_lanes_begin = 0;
  /// TLS sessions and DNS answers shared by every transfer of every lane, so new connections to a
  /// host resume the session. Only the engine thread uses it, hence no lock callbacks.
  CURLSH* share = nullptr;
  int epoll_fd = -1;
  int wake_fd = -1;
  std::thread thread;
  std::thread::id thread_id;

  // Shared with submitting threads, guarded by mutex.
  std::mutex mutex;
  std::deque<std::unique_ptr<transfer>> inbox;
  std::vector<uint64_t> cancels;
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::function<void()>>> new_tasks;
  bool stopping = false;
  /// Set by the engine thread once it takes no more work: late submissions complete inline.
  bool closed = false;

  std::atomic<uint64_t> next_id{1};
  std::atomic<uint64_t> submitted{0};
  std::atomic<uint64_t> completed{0};
  std::atomic<uint64_t> peak{0};

  // Engine thread only.
  std::unordered_map<uint64_t, std::unique_ptr<transfer>> active;
  /// Timer tasks by deadline (ties in submission order).
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> tasks;

  static error cancelled(const transfer& t) {
    return error::make_transient("http.cancelled",
                                 t.request.method + " " + t.request.url + ": cancelled");
  }

  void deliver(transfer& t, result<http_response> r) {
    completed.fetch_add(1, std::memory_order_relaxed);
    auto done = std::move(t.done);
    try {
      done(std::move(r));
    } catch (const std::exception& e) {
      log::error("http engine: a completion callback threw", {{"error", e.what()}});
    } catch (...) {
      log::error("http engine: a completion callback threw a non-standard exception");
    }
  }

  /// A CR, LF or NUL in the method or a header would let a caller's data split the request.
  static bool unsafe(std::string_view s) {
    return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
  }

  void start(std::unique_ptr<transfer> owned) {
    auto& t = *owned;
    bool bad = unsafe(t.request.method) || t.request.method.empty();
    for (const auto& [name, value] : t.request.headers)
      bad = bad || unsafe(name) || unsafe(value) || name.empty();
    if (bad) {
      deliver(t, error::make_permanent("http.invalid_request",
                                       t.request.method + " " + t.request.url
                                           + ": empty method or header name, or CR/LF/NUL in the "
                                             "method or a header"));
      return;
    }
    t.easy = curl_easy_init();
    if (t.easy == nullptr) {
      deliver(t, error::make_transient("http.transport", "curl_easy_init failed"));
      return;
    }
    auto& r = t.request;
    CURL* e = t.easy;
    curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
    if (share != nullptr)
      curl_easy_setopt(e, CURLOPT_SHARE, share);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.error_buffer);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!options.ca_file.empty())
      curl_easy_setopt(e, CURLOPT_CAINFO, options.ca_file.c_str());
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    // Over HTTP/2 (what https providers negotiate) a burst of requests to one host waits for the
    // first connection to tell whether it multiplexes, instead of each opening its own connection
    // and TLS session: thousands in flight share a connection per 100 streams. Plain http is
    // HTTP/1.1 here, and waiting there only slowed a burst's start (bench/slow_io: the first
    // 10% of 30,000 calls 3 s later).
    bool https = r.url.size() >= 6 && iequals(std::string_view{r.url}.substr(0, 6), "https:");
    if (https)
      curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(std::max<int64_t>(1, r.connect_timeout.count())));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(std::max<int64_t>(1, r.total_timeout.count())));
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(r.max_response_bytes));
    curl_easy_setopt(
        e, CURLOPT_BUFFERSIZE,
        static_cast<long>(std::clamp<size_t>(r.receive_buffer_bytes, 1024, CURL_MAX_READ_SIZE)));
    // A request body is sent from an upload buffer per transfer over HTTP/2: libcurl's least
    // (16 KiB), not its default 64 KiB, at thousands of transfers in flight.
    curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 16L * 1024);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(e, CURLOPT_USERAGENT, options.user_agent.c_str());

    bool has_content_type = false;
    bool has_expect = false;
    for (const auto& [name, value] : r.headers) {
      has_content_type = has_content_type || iequals(name, "content-type");
      has_expect = has_expect || iequals(name, "expect");
      // "Name;" is curl's spelling of a header with an empty value.
      std::string line = name;
      line.append(value.empty() ? ";" : ": ").append(value);
      t.headers = curl_slist_append(t.headers, line.c_str());
    }
    if (r.method == "GET" && r.body.empty()) {
      curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (r.method == "HEAD") {
      curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else {
      if (r.method != "POST")
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.data());
      // curl would add a form content type and wait for "100 Continue" on large bodies.
      if (!has_content_type)
        t.headers = curl_slist_append(t.headers, "Content-Type:");
      if (!has_expect)
        t.headers = curl_slist_append(t.headers, "Expect:");
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);

    auto first = lanes.begin() + static_cast<std::ptrdiff_t>(https ? https_lanes_begin : 0);
    auto last = https ? lanes.end() : lanes.begin() + static_cast<std::ptrdiff_t>(http_lanes_end);
    auto& l = **std::min_element(
        first, last, [](const auto& a, const auto& b) { return a->active < b->active; });
    if (auto rc = curl_multi_add_handle(l.multi, e); rc != CURLM_OK) {
      deliver(t, error::make_transient("http.transport", std::string("curl_multi_add_handle: ")
                                                             + curl_multi_strerror(rc)));
      return;
    }
    t.owner = &l;
    ++l.active;
    active.emplace(t.id, std::move(owned));
  }

  /// Takes a started transfer out of its lane.
  static void detach(transfer& t) {
    curl_multi_remove_handle(t.owner->multi, t.easy);
    --t.owner->active;
  }

  void finish(CURL* easy, CURLcode code) {
    transfer* t = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
    auto it = active.find(t->id);
    auto owned = std::move(it->second);
    active.erase(it);
    detach(*t);
    if (code == CURLE_OK) {
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &t->response.status);
      deliver(*t, std::move(t->response));
    } else {
      deliver(*t, classify(code, *t));
    }
  }

  void cancel_active(uint64_t id) {
    auto it = active.find(id);
    if (it == active.end())
      return; // already completed: cancel is a no-op
    auto owned = std::move(it->second);
    active.erase(it);
    detach(*owned);
    deliver(*owned, cancelled(*owned));
  }

  /// Moves the inbox into curl; returns false once the destructor asked to stop.
  bool drain() {
    std::deque<std::unique_ptr<transfer>> incoming;
    std::vector<uint64_t> to_cancel;
    std::vector<std::pair<std::chrono::steady_clock::time_point, std::function<void()>>> timed;
    bool stop = false;
    {
      std::lock_guard<std::mutex> guard(mutex);
      incoming.swap(inbox);
      to_cancel.swap(cancels);
      timed.swap(new_tasks);
      stop = stopping;
    }
    for (auto& [due, task] : timed)
      tasks.emplace(due, std::move(task));
    for (auto& t : incoming)
      start(std::move(t));
    for (auto id : to_cancel)
      cancel_active(id);
    return !stop;
  }

  static int on_socket(CURL*, curl_socket_t fd, int what, void* user, void* socket_data) {
    auto* l = static_cast<lane*>(user);
    auto* self = static_cast<impl*>(l->engine);
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(self->epoll_fd, EPOLL_CTL_DEL, fd, nullptr); // may be closed already: ignore
      return 0;
    }
    epoll_event ev{};
    ev.data.u64 = socket_key(*l, fd);
    ev.events = ((what & CURL_POLL_IN) != 0 ? EPOLLIN : 0u)
                | ((what & CURL_POLL_OUT) != 0 ? EPOLLOUT : 0u);
    // curl_multi_assign marks sockets we registered; ADD/MOD fall back on each other because a
    // closed and reopened descriptor number can come back with stale state.
    int op = socket_data == nullptr ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (epoll_ctl(self->epoll_fd, op, fd, &ev) != 0) {
      op = op == EPOLL_CTL_ADD ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
      if (epoll_ctl(self->epoll_fd, op, fd, &ev) != 0)
        log::error("http engine: epoll_ctl failed", {{"socket", fd}});
    }
    if (socket_data == nullptr)
      curl_multi_assign(l->multi, fd, l);
    return 0;
  }

  static int on_timer(CURLM*, long timeout_ms, void* user) {
    auto* l = static_cast<lane*>(user);
    if (timeout_ms < 0)
      l->timer.reset();
    else
      l->timer = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    return 0;
  }

  void read_completions(lane& l) {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(l.multi, &left))
      if (msg->msg == CURLMSG_DONE)
        finish(msg->easy_handle, msg->data.result);
  }

  /// Runs the timer tasks that are due (each may submit requests or schedule tasks).
  void run_due_tasks() {
    auto now = std::chrono::steady_clock::now();
    while (!tasks.empty() && tasks.begin()->first <= now) {
      auto task = std::move(tasks.begin()->second);
      tasks.erase(tasks.begin());
      try {
        task();
      } catch (const std::exception& e) {
        log::error("http engine: a timer task threw", {{"error", e.what()}});
      } catch (...) {
        log::error("http engine: a timer task threw a non-standard exception");
      }
    }
  }

  /// Milliseconds until the earliest lane timer or task (0 if one is due), at most 1 s. Rounded
  /// up: a deadline 0.4 ms away waits 1 ms, where rounding down would poll without waiting until
  /// it came (epoll_wait returning at once, hundreds of thousands of times a run).
  int next_wait_ms() const {
    auto wait = std::chrono::milliseconds(1000);
    auto now = std::chrono::steady_clock::now();
    if (!tasks.empty())
      wait = std::min(wait,
                      std::chrono::ceil<std::chrono::milliseconds>(tasks.begin()->first - now));
    for (const auto& l : lanes)
      if (l->timer)
        wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(*l->timer - now));
    return static_cast<int>(std::max<int64_t>(wait.count(), 0));
  }

  void run() {
    name_this_thread("ingestd-http");
    constexpr int max_events = 256;
    epoll_event events[max_events];
    int running = 0;
    while (drain()) {
      // curl's timers may have been set (to 0) by the handles just added.
      int n = epoll_wait(epoll_fd, events, max_events, next_wait_ms());
      for (int i = 0; i < n; ++i) {
        auto key = events[i].data.u64;
        if (key == wake_key) {
          uint64_t count = 0;
          [[maybe_unused]] auto r = read(wake_fd, &count, sizeof(count));
          continue;
        }
        auto& l = *lanes[key >> 32];
        auto fd = static_cast<curl_socket_t>(key & 0xffffffffu);
        int flags = 0;
        if ((events[i].events & EPOLLIN) != 0)
          flags |= CURL_CSELECT_IN;
        if ((events[i].events & EPOLLOUT) != 0)
          flags |= CURL_CSELECT_OUT;
        if ((events[i].events & (EPOLLERR | EPOLLHUP)) != 0)
          flags |= CURL_CSELECT_ERR;
        curl_multi_socket_action(l.multi, fd, flags, &running);
      }
      auto now = std::chrono::steady_clock::now();
      for (auto& l : lanes) {
        if (l->timer && *l->timer <= now) {
          l->timer.reset();
          curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        read_completions(*l);
      }
      run_due_tasks();
    }
    shutdown();
  }

  void wake() {
    uint64_t one = 1;
    [[maybe_unused]] auto r = write(wake_fd, &one, sizeof(one));
  }

  void shutdown() {
    // Every request still here gets "http.cancelled", including ones that callbacks submit
    // while we cancel; then the inbox closes and later submissions complete inline.
    for (;;) {
      while (!active.empty())
        cancel_active(active.begin()->first);
      std::deque<std::unique_ptr<transfer>> incoming;
      {
        std::lock_guard<std::mutex> guard(mutex);
        incoming.swap(inbox);
        cancels.clear();
        if (incoming.empty()) {
          closed = true;
          break;
        }
      }
      for (auto& t : incoming)
        deliver(*t, cancelled(*t));
    }
    // Pending tasks are dropped without running; destroying one may answer its caller (the LLM
    // client reports "cancelled"), which may submit or schedule: those complete or drop inline.
    std::vector<std::function<void()>> dropped;
    {
      std::lock_guard<std::mutex> guard(mutex);
      for (auto& [due, task] : new_tasks)
        dropped.push_back(std::move(task));
      new_tasks.clear();
    }
    for (auto& [due, task] : tasks)
      dropped.push_back(std::move(task));
    tasks.clear();
    dropped.clear();
  }
};

curl_engine::curl_engine(curl_engine_options options) : impl_(std::make_unique<impl>()) {
  std::call_once(global_init_once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw std::runtime_error("curl_global_init failed");
  });
  impl_->options = std::move(options);
  const auto& o = impl_->options;
  bool bounded = o.max_total_connections > 0 || o.max_connections_per_host > 0;
  int lane_count = bounded ? 1 : std::max(1, o.lanes);
  bool https_apart = !bounded && o.https_connections_per_host > 0;
  impl_->http_lanes_end = static_cast<size_t>(lane_count);
  impl_->https_lanes_begin = https_apart ? impl_->http_lanes_end : 0;
  if (https_apart)
    lane_count *= 2;
  impl_->share = curl_share_init();
  if (impl_->share != nullptr) {
    curl_share_setopt(impl_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(impl_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  }
  for (int i = 0; i < lane_count; ++i) {
    auto l = std::make_unique<lane>();
    l->engine = impl_.get();
    l->index = static_cast<uint32_t>(i);
    l->multi = curl_multi_init();
    if (l->multi == nullptr)
      throw std::runtime_error("curl_multi_init failed");
    auto* m = l->multi;
    curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, &impl::on_socket);
    curl_multi_setopt(m, CURLMOPT_SOCKETDATA, l.get());
    curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, &impl::on_timer);
    curl_multi_setopt(m, CURLMOPT_TIMERDATA, l.get());
    if (o.max_total_connections > 0)
      curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, o.max_total_connections);
    if (o.max_connections_per_host > 0)
      curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, o.max_connections_per_host);
    else if (https_apart && static_cast<size_t>(i) >= impl_->https_lanes_begin)
      curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, o.https_connections_per_host);
    if (o.connection_cache_size > 0)
      curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, o.connection_cache_size);
    impl_->lanes.push_back(std::move(l));
  }
  impl_->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  impl_->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl_->epoll_fd < 0 || impl_->wake_fd < 0)
    throw std::runtime_error("epoll_create1/eventfd failed");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = wake_key;
  epoll_ctl(impl_->epoll_fd, EPOLL_CTL_ADD, impl_->wake_fd, &ev);
  impl_->thread = std::thread([this] { impl_->run(); });
  impl_->thread_id = impl_->thread.get_id();
}

curl_engine::~curl_engine() {
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake();
  impl_->thread.join();
  for (auto& l : impl_->lanes)
    curl_multi_cleanup(l->multi);
  if (impl_->share != nullptr)
    curl_share_cleanup(impl_->share);
  close(impl_->epoll_fd);
  close(impl_->wake_fd);
}

uint64_t curl_engine::submit(http_request request, callback<http_response> done) {
  auto t = std::make_unique<transfer>();
  t->id = impl_->next_id.fetch_add(1, std::memory_order_relaxed);
  t->request = std::move(request);
  t->done = std::move(done);
  auto id = t->id;
  auto in_flight = impl_->submitted.fetch_add(1, std::memory_order_relaxed) + 1
                   - impl_->completed.load(std::memory_order_relaxed);
  auto peak = impl_->peak.load(std::memory_order_relaxed);
  while (in_flight > peak && !impl_->peak.compare_exchange_weak(peak, in_flight)) {
  }
  {
    std::unique_lock<std::mutex> guard(impl_->mutex);
    if (impl_->closed) {
      // Only reachable when a caller races submit() with the engine's destruction.
      guard.unlock();
      impl_->deliver(*t, impl::cancelled(*t));
      return id;
    }
    impl_->inbox.push_back(std::move(t));
  }
  impl_->wake();
  return id;
}

void curl_engine::after(std::chrono::milliseconds delay, std::function<void()> task) {
  if (!task)
    return;
  auto due = std::chrono::steady_clock::now() + delay;
  {
    std::unique_lock<std::mutex> guard(impl_->mutex);
    if (impl_->closed) {
      guard.unlock();
      return; // destroyed here, outside the lock, without running
    }
    impl_->new_tasks.emplace_back(due, std::move(task));
  }
  impl_->wake();
}

void curl_engine::cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    if (impl_->closed)
      return;
    impl_->cancels.push_back(id);
  }
  impl_->wake();
}

curl_engine_stats curl_engine::stats() const {
  curl_engine_stats s;
  s.submitted = impl_->submitted.load(std::memory_order_relaxed);
  s.completed = impl_->completed.load(std::memory_order_relaxed);
  s.in_flight = s.submitted >= s.completed ? s.submitted - s.completed : 0;
  s.peak_in_flight = impl_->peak.load(std::memory_order_relaxed);
  return s;
}

std::thread::id curl_engine::thread_id() const {
  return impl_->thread_id;
}

} // namespace ingestd
