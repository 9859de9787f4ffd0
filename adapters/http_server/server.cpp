// The HTTP server over libmicrohttpd (see server.hpp). One polling thread (epoll) reads and writes
// every connection; a request's first call (headers in) is judged at once, its body is counted as
// it arrives, and its handler runs on a worker while the connection is suspended. A watchdog
// thread enforces the header and request deadlines, which libmicrohttpd's inactivity timeout
// alone does not (a client sending a byte every few seconds is never idle).
//
// An answer given before the body has been read (a refusal on the headers with a body announced,
// 413 or 408 in the middle of a body) is written on the socket directly, followed by a FIN; the
// connection then discards what the client still sends for a short while before it is closed, so
// that the client reads the answer instead of a reset.
#include "adapters/http_server/server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>
#include <unordered_set>

#include <microhttpd.h>

#include "adapters/http_server/checks.hpp"
#include "adapters/http_server/form.hpp"
#include "adapters/support/log.hpp"

namespace ingestd::http_server {

namespace {

using clock = std::chrono::steady_clock;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch())
      .count();
}

int64_t ns(std::chrono::seconds s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(s).count();
}

/// How long a connection that got an early answer keeps discarding what the client still sends.
constexpr int64_t linger_ns = 2'000'000'000;

struct route_entry {
  std::string method;
  std::regex pattern;
  handler run;
  route_options options;
};

struct area_entry {
  std::string prefix;
  error_renderer render;
  decorator decorate;
};

/// Where a connection is: waiting for a request's headers, receiving its body, handling it, or
/// answered early (it closes).
enum phase : int { waiting = 0, receiving = 1, handling = 2, answered = 3 };

/// One TCP connection (libmicrohttpd's socket context), known to the watchdog.
struct connection_entry {
  int fd = -1;
  std::atomic<int> state{waiting};
  /// When the current phase's deadline started: the connection's start, or the last response.
  std::atomic<int64_t> since{0};
  /// Whether a request has been answered on it (an idle keep-alive connection is closed without
  /// an answer).
  std::atomic<bool> served{false};
};

/// One request in progress (libmicrohttpd's request context).
struct exchange {
  connection_entry* conn = nullptr;
  request req;
  const route_entry* route = nullptr;
  int64_t started = 0;
  size_t max_body = 0;
  /// Bytes of max_buffered_bytes held by this request.
  size_t reserved = 0;
  bool length_reserved = false;
  /// Answered on the socket before the body ended: the rest is discarded until linger_until.
  bool raw_answered = false;
  int64_t linger_until = 0;
  bool dispatched = false;
  std::atomic<bool> ready{false};
  response res;
};

const char* reason(int status) {
  const char* r = MHD_get_reason_phrase_for(static_cast<unsigned>(status));
  return r != nullptr && *r != '\0' ? r : "Unknown";
}

std::string address_text(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa == nullptr)
    return {};
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

int port_of(const sockaddr* sa) {
  if (sa == nullptr)
    return 0;
  if (sa->sa_family == AF_INET)
    return ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
  if (sa->sa_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
  return 0;
}

/// The answer as bytes on the wire, for an answer written on the socket directly.
std::string wire_bytes(const response& res) {
  std::string out = "HTTP/1.1 " + std::to_string(res.status) + " " + reason(res.status) + "\r\n";
  for (auto& [name, value] : res.headers) {
    if (name.find_first_of("\r\n") != std::string::npos
        || value.find_first_of("\r\n") != std::string::npos)
      continue;
    out.append(name).append(": ").append(value).append("\r\n");
  }
  out += "Content-Length: " + std::to_string(res.body.size()) + "\r\nConnection: close\r\n\r\n";
  out += res.body;
  return out;
}

void write_raw(int fd, const response& res) {
  auto bytes = wire_bytes(res);
  // Best effort: a small answer fits the socket's buffer; a client that does not read it loses it.
  [[maybe_unused]] auto sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

} // namespace

struct server::impl {
  explicit impl(server_options o) : opts(std::move(o)) {}

  server_options opts;
  std::vector<std::unique_ptr<route_entry>> routes;
  gate pre_gate;
  std::vector<area_entry> areas;
  MHD_Daemon* daemon = nullptr;
  int listen_fd = -1;
  int bound_port = 0;
  std::atomic<bool> stopping{false};
  std::atomic<size_t> buffered{0};

  std::mutex work_mtx;
  std::condition_variable work_cv;
  std::condition_variable idle_cv;
  std::deque<std::function<void()>> work;
  int busy = 0;
  bool workers_stop = false;
  std::vector<std::thread> workers;

  std::mutex conn_mtx;
  std::unordered_set<connection_entry*> conns;
  std::thread watchdog;
  std::mutex watchdog_mtx;
  std::condition_variable watchdog_cv;
  bool watchdog_stop = false;

  // --- answers ---

  const area_entry* area_of(std::string_view path) const {
    const area_entry* best = nullptr;
    for (auto& a : areas)
      if (path.starts_with(a.prefix) && (best == nullptr || a.prefix.size() > best->prefix.size()))
        best = &a;
    return best;
  }

  response refusal_response(const request& req, int status, std::string_view code,
                            std::string_view message) const {
    response res;
    res.status = status;
    auto* area = area_of(req.path);
    if (area != nullptr && area->render)
      area->render(res, status, code, message);
    else
      res.set_content(std::string{message} + "\n", "text/plain; charset=utf-8");
    res.status = status;
    if (status == 503)
      res.set_header("Retry-After", "5");
    if (status == 408 || status == 413 || status == 503)
      res.set_header("Connection", "close");
    return res;
  }

  void decorate(const request& req, response& res) const {
    if (auto* area = area_of(req.path); area != nullptr && area->decorate)
      area->decorate(req, res);
  }

  static void queue(MHD_Connection* c, const response& res) {
    auto* r = MHD_create_response_from_buffer(res.body.size(), const_cast<char*>(res.body.data()),
                                              MHD_RESPMEM_MUST_COPY);
    if (r == nullptr)
      return;
    for (auto& [name, value] : res.headers) {
      if (strcasecmp(name.c_str(), "Content-Length") == 0)
        continue;
      MHD_add_response_header(r, name.c_str(), value.c_str());
    }
    MHD_queue_response(c, static_cast<unsigned>(res.status), r);
    MHD_destroy_response(r);
  }

  // --- the body's memory ---

  bool reserve(exchange& ex, size_t n) {
    auto before = buffered.fetch_add(n);
    if (before + n > opts.limits.max_buffered_bytes) {
      buffered.fetch_sub(n);
      return false;
    }
    ex.reserved += n;
    return true;
  }

  void release(exchange& ex) {
    buffered.fetch_sub(ex.reserved);
    ex.reserved = 0;
  }

  // --- the request's stages ---

  /// The answer on the headers alone, or nullopt to read the body.
  std::optional<response> judge_head(exchange& ex) {
    auto& req = ex.req;
    if (stopping)
      return refusal_response(req, 503, "http.stopping", "the server is shutting down");
    body_framing framing;
    head_rules rules{opts.allowed_hosts, std::numeric_limits<size_t>::max()};
    if (auto refused = check_head(req.method, req.headers, rules, &framing))
      return refusal_response(req, refused->status, refused->code, refused->message);
    if (pre_gate) {
      response res;
      if (!pre_gate(req, res))
        return res;
    }
    auto method = req.method == "HEAD" ? std::string{"GET"} : req.method;
    for (auto& r : routes)
      if (r->method == method && std::regex_match(req.path, req.matches, r->pattern)) {
        ex.route = r.get();
        break;
      }
    if (ex.route == nullptr)
      return refusal_response(req, 404, "http.not_found", "no such path");
    ex.max_body = ex.route->options.max_body;
    if (framing.content_length && *framing.content_length > ex.max_body)
      return refusal_response(req, 413, "http.too_large",
                              "the body is larger than this path takes ("
                                  + std::to_string(ex.max_body) + " bytes)");
    if (ex.route->options.before_body) {
      response res;
      if (!ex.route->options.before_body(req, res))
        return res;
    }
    if (framing.content_length) {
      if (!reserve(ex, static_cast<size_t>(*framing.content_length)))
        return refusal_response(req, 503, "http.busy",
                                "too many uploads at once; try again shortly");
      ex.length_reserved = true;
      ex.req.body.reserve(static_cast<size_t>(*framing.content_length));
    }
    return std::nullopt;
  }

  /// Answers on the socket now (before the body's end): the connection closes after a linger.
  MHD_Result answer_early(exchange& ex, const response& res) {
    if (ex.conn != nullptr) {
      int expected = receiving;
      if (!ex.conn->state.compare_exchange_strong(expected, answered))
        return MHD_NO; // the watchdog answered first
      write_raw(ex.conn->fd, res);
      ::shutdown(ex.conn->fd, SHUT_WR);
    }
    ex.raw_answered = true;
    ex.linger_until = now_ns() + linger_ns;
    release(ex);
    std::string{}.swap(ex.req.body);
    return ex.conn != nullptr ? MHD_YES : MHD_NO;
  }

  MHD_Result on_body(exchange& ex, const char* data, size_t* size) {
    size_t n = *size;
    *size = 0;
    if (ex.raw_answered)
      return now_ns() < ex.linger_until ? MHD_YES : MHD_NO;
    if (ex.conn != nullptr && ex.conn->state.load() != receiving)
      return MHD_NO;
    if (now_ns() - ex.started > ns(opts.limits.request_timeout))
      return answer_early(
          ex, refusal_response(ex.req, 408, "http.timeout", "the request did not arrive in time"));
    if (ex.req.body.size() + n > ex.max_body) {
      log::info("http: body over the limit", {{"server", opts.name},
                                              {"path", ex.req.path},
                                              {"limit", static_cast<int64_t>(ex.max_body)}});
      auto res = refusal_response(ex.req, 413, "http.too_large",
                                  "the body is larger than this path takes ("
                                      + std::to_string(ex.max_body) + " bytes)");
      decorate(ex.req, res);
      return answer_early(ex, res);
    }
    if (!ex.length_reserved && !reserve(ex, n))
      return answer_early(ex, refusal_response(ex.req, 503, "http.busy",
                                               "too many uploads at once; try again shortly"));
    ex.req.body.append(data, n);
    return MHD_YES;
  }

  /// Runs the route's handler on the whole request (on a worker, or inline).
  void run(exchange& ex) {
    auto& req = ex.req;
    auto& res = ex.res;
    try {
      auto type = media_type(req.get_header_value("Content-Type"));
      if (type == "application/x-www-form-urlencoded") {
        for (auto& [k, v] : parse_urlencoded(req.body))
          req.params.emplace(std::move(k), std::move(v));
      } else if (type == "multipart/form-data") {
        auto boundary = multipart_boundary(req.get_header_value("Content-Type"));
        auto parts = boundary ? parse_multipart(req.body, *boundary)
                              : result<std::vector<form_part>>{error::make_permanent(
                                  "http.bad_form", "the multipart body has no boundary")};
        if (!parts) {
          res = refusal_response(req, 400, "http.bad_form", parts.error().message);
          decorate(req, res);
          return;
        }
        for (auto& p : *parts) {
          auto name = p.name;
          req.files.emplace(std::move(name), std::move(p));
        }
      }
      ex.route->run(req, res);
    } catch (const std::exception& e) {
      log::error("http: handler failed",
                 {{"server", opts.name}, {"path", req.path}, {"error", e.what()}});
      res = refusal_response(req, 500, "http.internal", "internal error");
    } catch (...) {
      log::error("http: handler failed", {{"server", opts.name}, {"path", req.path}});
      res = refusal_response(req, 500, "http.internal", "internal error");
    }
    decorate(req, res);
  }

  void post_work(std::function<void()> job) {
    {
      std::lock_guard guard{work_mtx};
      work.push_back(std::move(job));
    }
    work_cv.notify_one();
  }

  void work_loop() {
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock lock{work_mtx};
        work_cv.wait(lock, [this] { return workers_stop || !work.empty(); });
        if (work.empty())
          return;
        job = std::move(work.front());
        work.pop_front();
        ++busy;
      }
      job();
      {
        std::lock_guard guard{work_mtx};
        --busy;
      }
      idle_cv.notify_all();
    }
  }

  MHD_Result on_access(MHD_Connection* c, const char* url, const char* method, const char* upload,
                       size_t* size, void** context) {
    auto* ex = static_cast<exchange*>(*context);
    if (ex == nullptr) {
      auto* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
      auto* conn = info != nullptr ? static_cast<connection_entry*>(info->socket_context) : nullptr;
      if (conn != nullptr) {
        int expected = waiting;
        if (!conn->state.compare_exchange_strong(expected, receiving))
          return MHD_NO; // the watchdog closed it
      }
      auto owned = std::make_unique<exchange>();
      owned->conn = conn;
      owned->started = conn != nullptr ? conn->since.load() : now_ns();
      auto& req = owned->req;
      req.method = method;
      req.path = url;
      MHD_get_connection_values(
          c, MHD_HEADER_KIND,
          [](void* cls, MHD_ValueKind, const char* key, const char* value) -> MHD_Result {
            static_cast<header_map*>(cls)->emplace(key, value != nullptr ? value : "");
            return MHD_YES;
          },
          &req.headers);
      MHD_get_connection_values(
          c, MHD_GET_ARGUMENT_KIND,
          [](void* cls, MHD_ValueKind, const char* key, const char* value) -> MHD_Result {
            static_cast<param_map*>(cls)->emplace(key, value != nullptr ? value : "");
            return MHD_YES;
          },
          &req.params);
      if (auto* addr = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS)) {
        req.remote_addr = address_text(addr->client_addr);
        req.remote_port = port_of(addr->client_addr);
      }
      ex = owned.release();
      *context = ex;
      auto refused = judge_head(*ex);
      if (!refused)
        return MHD_YES;
      decorate(ex->req, *refused);
      bool body_follows = ex->req.has_header("Transfer-Encoding")
                          || (ex->req.has_header("Content-Length")
                              && ex->req.get_header_value("Content-Length") != "0");
      if (body_follows && ex->conn != nullptr)
        return answer_early(*ex, *refused);
      // No body: answered once the request is complete (now), and the connection is kept.
      if (ex->conn != nullptr)
        ex->conn->state = handling;
      ex->res = std::move(*refused);
      ex->ready.store(true, std::memory_order_release);
      return MHD_YES;
    }
    if (*size != 0)
      return on_body(*ex, upload, size);
    // The whole request is in.
    if (ex->raw_answered)
      return MHD_NO;
    if (ex->ready.load(std::memory_order_acquire)) {
      queue(c, ex->res);
      return MHD_YES;
    }
    if (ex->dispatched)
      return MHD_YES;
    if (ex->conn != nullptr) {
      int expected = receiving;
      if (!ex->conn->state.compare_exchange_strong(expected, handling))
        return MHD_NO;
    }
    if (ex->route->options.inline_handler || stopping) {
      if (stopping)
        ex->res = refusal_response(ex->req, 503, "http.stopping", "the server is shutting down");
      else
        run(*ex);
      queue(c, ex->res);
      return MHD_YES;
    }
    ex->dispatched = true;
    MHD_suspend_connection(c);
    post_work([this, c, ex] {
      run(*ex);
      ex->ready.store(true, std::memory_order_release);
      MHD_resume_connection(c);
    });
    return MHD_YES;
  }

  void on_completed(void** context) {
    auto* ex = static_cast<exchange*>(*context);
    if (ex == nullptr)
      return;
    release(*ex);
    if (ex->conn != nullptr) {
      ex->conn->since = now_ns();
      ex->conn->served = true;
      int expected = handling;
      ex->conn->state.compare_exchange_strong(expected, waiting);
      expected = receiving;
      ex->conn->state.compare_exchange_strong(expected, waiting);
    }
    delete ex;
    *context = nullptr;
  }

  void on_connection(MHD_Connection* c, void** socket_context,
                     MHD_ConnectionNotificationCode code) {
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      auto* conn = new connection_entry;
      if (auto* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD))
        conn->fd = info->connect_fd;
      conn->since = now_ns();
      {
        std::lock_guard guard{conn_mtx};
        conns.insert(conn);
      }
      *socket_context = conn;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
      auto* conn = static_cast<connection_entry*>(*socket_context);
      if (conn == nullptr)
        return;
      {
        // The socket is closed after this returns: the watchdog never uses a closed one.
        std::lock_guard guard{conn_mtx};
        conns.erase(conn);
      }
      delete conn;
      *socket_context = nullptr;
    }
  }

  void watch() {
    std::unique_lock lock{watchdog_mtx};
    while (!watchdog_cv.wait_for(lock, std::chrono::milliseconds{200},
                                 [this] { return watchdog_stop; })) {
      auto now = now_ns();
      std::lock_guard guard{conn_mtx};
      for (auto* conn : conns) {
        int state = conn->state.load();
        auto age = now - conn->since.load();
        if (state == waiting && age > ns(opts.limits.header_timeout)) {
          if (!conn->state.compare_exchange_strong(state, answered))
            continue;
          // A fresh connection that never sent its headers gets a 408; an idle keep-alive
          // connection is closed quietly.
          if (!conn->served)
            write_raw(conn->fd, refusal_response(request{}, 408, "http.timeout",
                                                 "the request's headers did not arrive in time"));
          ::shutdown(conn->fd, SHUT_RDWR);
        } else if (state == receiving && age > ns(opts.limits.request_timeout)) {
          if (!conn->state.compare_exchange_strong(state, answered))
            continue;
          write_raw(conn->fd, refusal_response(request{}, 408, "http.timeout",
                                               "the request did not arrive in time"));
          ::shutdown(conn->fd, SHUT_RDWR);
        }
      }
    }
  }
};

namespace {

MHD_Result access_trampoline(void* cls, MHD_Connection* c, const char* url, const char* method,
                             const char*, const char* upload, size_t* size, void** context) {
  return static_cast<server::impl*>(cls)->on_access(c, url, method, upload, size, context);
}

void completed_trampoline(void* cls, MHD_Connection*, void** context, MHD_RequestTerminationCode) {
  static_cast<server::impl*>(cls)->on_completed(context);
}

void connection_trampoline(void* cls, MHD_Connection* c, void** socket_context,
                           MHD_ConnectionNotificationCode code) {
  static_cast<server::impl*>(cls)->on_connection(c, socket_context, code);
}

void log_trampoline(void* cls, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string text{buf};
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.pop_back();
  log::debug("http: libmicrohttpd",
             {{"server", static_cast<server::impl*>(cls)->opts.name}, {"detail", text}});
}

/// A listening socket on bind:port; -1 with `why` set when it cannot be had.
int listen_on(const std::string& bind, int port, int& family, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  auto service = std::to_string(port);
  auto host = bind.empty() ? std::string{"0.0.0.0"} : bind;
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    why = gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (auto* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0)
      continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
      continue;
    }
    family = ai->ai_family;
  }
  freeaddrinfo(found);
  return fd;
}

} // namespace

server::server(server_options opts) : impl_(std::make_unique<impl>(std::move(opts))) {
  auto& o = impl_->opts;
  // A bind address that is a name is a name this endpoint answers to.
  if (!o.bind.empty() && !is_ip_literal(o.bind))
    o.allowed_hosts.push_back(o.bind);
}

server::~server() {
  stop();
}

void server::route(std::string method, const std::string& pattern, handler h, route_options o) {
  impl_->routes.push_back(std::make_unique<route_entry>(
      route_entry{std::move(method), std::regex{pattern}, std::move(h), std::move(o)}));
}

void server::get(const std::string& pattern, handler h, route_options o) {
  route("GET", pattern, std::move(h), std::move(o));
}

void server::post(const std::string& pattern, handler h, route_options o) {
  route("POST", pattern, std::move(h), std::move(o));
}

void server::del(const std::string& pattern, handler h, route_options o) {
  route("DELETE", pattern, std::move(h), std::move(o));
}

void server::set_gate(gate g) {
  impl_->pre_gate = std::move(g);
}

void server::set_area(std::string prefix, error_renderer render, decorator decorate) {
  for (auto& a : impl_->areas)
    if (a.prefix == prefix) {
      a.render = std::move(render);
      a.decorate = std::move(decorate);
      return;
    }
  impl_->areas.push_back(area_entry{std::move(prefix), std::move(render), std::move(decorate)});
}

void server::add_worker_threads(int n) {
  impl_->opts.worker_threads += std::max(n, 0);
}

const server_options& server::options() const {
  return impl_->opts;
}

int server::port() const {
  return impl_->bound_port;
}

result<void> server::start() {
  auto& d = *impl_;
  auto& o = d.opts;
  if (d.daemon != nullptr)
    return {};
  int family = AF_INET;
  std::string why;
  d.listen_fd = listen_on(o.bind, o.port, family, why);
  if (d.listen_fd < 0)
    return error::make_permanent(o.name + ".bind", "cannot listen on " + o.bind + ":"
                                                       + std::to_string(o.port) + ": " + why);
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  ::getsockname(d.listen_fd, reinterpret_cast<sockaddr*>(&local), &len);
  d.bound_port = port_of(reinterpret_cast<sockaddr*>(&local));
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME
                   | MHD_USE_ERROR_LOG;
  if (family == AF_INET6)
    flags |= MHD_USE_IPv6;
  d.daemon = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &access_trampoline, &d, MHD_OPTION_LISTEN_SOCKET, d.listen_fd,
      MHD_OPTION_CONNECTION_LIMIT, std::max(o.limits.max_connections, 1U),
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, std::max(o.limits.max_connections_per_address, 1U),
      MHD_OPTION_CONNECTION_TIMEOUT,
      static_cast<unsigned>(std::max<int64_t>(o.idle_timeout.count(), 1)),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, std::max<size_t>(o.memory_per_connection, 8192),
      MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_NOTIFY_COMPLETED, &completed_trampoline, &d,
      MHD_OPTION_NOTIFY_CONNECTION, &connection_trampoline, &d, MHD_OPTION_EXTERNAL_LOGGER,
      &log_trampoline, &d, MHD_OPTION_END);
  if (d.daemon == nullptr) {
    ::close(d.listen_fd);
    d.listen_fd = -1;
    return error::make_permanent(o.name + ".bind", "cannot start the HTTP server on " + o.bind + ":"
                                                       + std::to_string(d.bound_port));
  }
  for (int i = 0; i < std::max(o.worker_threads, 1); ++i)
    d.workers.emplace_back([&d] { d.work_loop(); });
  d.watchdog = std::thread{[&d] { d.watch(); }};
  return {};
}

void server::stop() {
  auto& d = *impl_;
  if (d.daemon == nullptr)
    return;
  d.stopping = true;
  MHD_quiesce_daemon(d.daemon);
  {
    // Handlers under way finish and resume their connections; no new one is dispatched.
    std::unique_lock lock{d.work_mtx};
    d.idle_cv.wait(lock, [&d] { return d.work.empty() && d.busy == 0; });
  }
  MHD_stop_daemon(d.daemon);
  d.daemon = nullptr;
  {
    std::lock_guard guard{d.work_mtx};
    d.workers_stop = true;
  }
  d.work_cv.notify_all();
  for (auto& t : d.workers)
    t.join();
  d.workers.clear();
  {
    std::lock_guard guard{d.watchdog_mtx};
    d.watchdog_stop = true;
  }
  d.watchdog_cv.notify_all();
  if (d.watchdog.joinable())
    d.watchdog.join();
  if (d.listen_fd >= 0)
    ::close(d.listen_fd);
  d.listen_fd = -1;
}

} // namespace ingestd::http_server
