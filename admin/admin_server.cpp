// The admin endpoint over http_server: liveness, readiness (database and queue reachable, not
// shutting down) and the Prometheus exposition (worker metrics plus the queue's figures).
#include "admin/admin_server.hpp"

#include <algorithm>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "adapters/http_server/checks.hpp"
#include "adapters/support/blocking_call.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

/// Runs the probe on a detached thread and hands out its answer as a shared future. A call while
/// a run is under way gets that run's future instead of starting another: a dependency that never
/// answers holds one thread, however many requests wait on it, and none of the server's threads.
template <class T>
class admin_server::background_probe {
public:
  explicit background_probe(std::function<result<T>()> probe) : probe_(std::move(probe)) {}

  /// The answer of the run under way, or of a new one.
  std::shared_future<result<T>> run() {
    std::lock_guard guard{mtx_};
    if (running_ && running_->wait_for(std::chrono::seconds{0}) != std::future_status::ready)
      return *running_;
    auto done = std::make_shared<std::promise<result<T>>>();
    running_ = done->get_future().share();
    // The thread owns a copy of the probe: it may outlive the server when the probe hangs.
    std::thread{[probe = probe_, done] { done->set_value(probe()); }}.detach();
    return *running_;
  }

  /// The probe's answer, or a transient error when `until` passes first.
  result<T> answer(const std::shared_future<result<T>>& f,
                   std::chrono::steady_clock::time_point until, std::chrono::milliseconds deadline,
                   std::string_view what) {
    if (f.wait_until(until) != std::future_status::ready)
      return timeout_error("admin.timeout", what, deadline);
    return f.get();
  }

private:
  std::function<result<T>()> probe_;
  std::mutex mtx_;
  std::optional<std::shared_future<result<T>>> running_;
};

namespace {

using http_server::request;
using http_server::response;

http_server::server_options server_options_of(const std::string& bind, int port,
                                              const admin_http_options& http) {
  http_server::server_options out;
  out.name = "admin";
  out.bind = bind;
  out.port = port;
  // Probes and scrapes are few: two handler threads (/healthz runs on the polling thread).
  out.worker_threads = 2;
  out.limits = http.limits;
  out.allowed_hosts = http.allowed_hosts;
  return out;
}

} // namespace

std::string queue_prometheus(const result<std::vector<queue_depth>>& all) {
  std::string up = "# HELP ingestd_queue_up Whether the queue answered the last depth query.\n"
                   "# TYPE ingestd_queue_up gauge\n";
  std::string messages = "# HELP ingestd_queue_messages Messages in the queue, by state.\n"
                         "# TYPE ingestd_queue_messages gauge\n";
  std::string oldest
      = "# HELP ingestd_queue_oldest_message_age_seconds Age of the oldest message in the queue.\n"
        "# TYPE ingestd_queue_oldest_message_age_seconds gauge\n";
  if (!all)
    return up; // no queue could be asked: no series
  for (auto& q : *all) {
    std::string label = "queue=\"";
    for (char c : q.queue)
      if (c != '"' && c != '\\' && c != '\n') // queue names are plain; never break the line
        label.push_back(c);
    label += "\"";
    up += "ingestd_queue_up{" + label + "} " + std::string{q.stats ? "1" : "0"} + "\n";
    if (!q.stats)
      continue;
    auto& s = *q.stats;
    messages += "ingestd_queue_messages{" + label + ",state=\"visible\"} "
                + std::to_string(s.visible) + "\n";
    messages += "ingestd_queue_messages{" + label + ",state=\"in_flight\"} "
                + std::to_string(s.in_flight) + "\n";
    messages += "ingestd_queue_messages{" + label + ",state=\"delayed\"} "
                + std::to_string(s.delayed) + "\n";
    oldest += "ingestd_queue_oldest_message_age_seconds{" + label + "} "
              + std::to_string(s.oldest_age_seconds) + "\n";
  }
  return up + messages + oldest;
}

std::string matching_prometheus(const result<matching_figures>& figures) {
  std::string out;
  out += "# HELP ingestd_matching_up Whether the database answered the last matching figures "
         "query.\n";
  out += "# TYPE ingestd_matching_up gauge\n";
  out += "ingestd_matching_up " + std::string{figures ? "1" : "0"} + "\n";
  if (!figures)
    return out;
  out += "# HELP ingestd_matching_documents Documents by matching status.\n";
  out += "# TYPE ingestd_matching_documents gauge\n";
  for (const char* status : {"pending", "in-progress", "succeeded", "failed"}) {
    int64_t n = 0;
    for (auto& [key, count] : figures->by_status)
      if (key == status)
        n = count;
    out += "ingestd_matching_documents{status=\"" + std::string{status} + "\"} " + std::to_string(n)
           + "\n";
  }
  out += "# HELP ingestd_matching_stalled_documents Documents whose matching has been in "
         "progress for more than 10 minutes (a crashed matching worker).\n";
  out += "# TYPE ingestd_matching_stalled_documents gauge\n";
  out += "ingestd_matching_stalled_documents "
         + std::to_string(figures->in_progress_over_10_minutes) + "\n";
  out += "# HELP ingestd_matching_oldest_in_progress_seconds Age of the oldest matching in "
         "progress.\n";
  out += "# TYPE ingestd_matching_oldest_in_progress_seconds gauge\n";
  out += "ingestd_matching_oldest_in_progress_seconds "
         + std::to_string(figures->oldest_in_progress_seconds) + "\n";
  return out;
}

std::string outbox_prometheus(const result<outbox_figures>& figures) {
  std::string out;
  out += "# HELP ingestd_outbox_up Whether the database answered the last outbox figures query.\n";
  out += "# TYPE ingestd_outbox_up gauge\n";
  out += "ingestd_outbox_up " + std::string{figures ? "1" : "0"} + "\n";
  if (!figures)
    return out;
  out += "# HELP ingestd_outbox_pending Outbox rows (queue messages of hand-offs, events for the "
         "sinks) not sent yet.\n";
  out += "# TYPE ingestd_outbox_pending gauge\n";
  out += "ingestd_outbox_pending " + std::to_string(figures->pending) + "\n";
  out += "# HELP ingestd_outbox_oldest_age_seconds Age of the oldest outbox row not sent yet (0: "
         "none).\n";
  out += "# TYPE ingestd_outbox_oldest_age_seconds gauge\n";
  out += "ingestd_outbox_oldest_age_seconds " + std::to_string(figures->oldest_pending_seconds)
         + "\n";
  out += "# HELP ingestd_outbox_dead_rows Outbox rows that failed outbox.max_attempts sends, kept "
         "unsent (ingestd events --dead; the relay's count is ingestd_outbox_dead_total).\n";
  out += "# TYPE ingestd_outbox_dead_rows gauge\n";
  out += "ingestd_outbox_dead_rows " + std::to_string(figures->dead) + "\n";
  return out;
}

std::string tenant_work_prometheus(const result<std::vector<tenant_work>>& figures) {
  std::string out;
  out += "# HELP ingestd_tenant_work_up Whether the database answered the last query of the "
         "open work per tenant.\n";
  out += "# TYPE ingestd_tenant_work_up gauge\n";
  out += "ingestd_tenant_work_up " + std::string{figures ? "1" : "0"} + "\n";
  if (!figures)
    return out;
  out += "# HELP ingestd_tenant_work_items Open work items by tenant, stage and state (waiting: "
         "queued, backing off or its lease ran out; in_flight: held by a worker). The database's "
         "view: every node shows the same.\n";
  out += "# TYPE ingestd_tenant_work_items gauge\n";
  for (const auto& w : *figures) {
    auto labels = "tenant=\"" + w.tenant_id.str() + "\",stage=\"" + w.stage + "\",state=";
    out += "ingestd_tenant_work_items{" + labels + "\"waiting\"} " + std::to_string(w.waiting)
           + "\n";
    out += "ingestd_tenant_work_items{" + labels + "\"in_flight\"} " + std::to_string(w.in_flight)
           + "\n";
  }
  return out;
}

admin_server::admin_server(std::string bind, int port, admin_probes probes,
                           const admin_http_options& http)
    : bind_(std::move(bind)), port_(port), probes_(std::move(probes)),
      server_(std::make_unique<http_server::server>(server_options_of(bind_, port_, http))) {
  if (probes_.database)
    database_ = std::make_shared<background_probe<void>>(probes_.database);
  if (probes_.queue)
    queue_ = std::make_shared<background_probe<queue_stats>>(probes_.queue);
  if (probes_.queues) {
    queues_ = std::make_shared<background_probe<std::vector<queue_depth>>>(
        [probe = probes_.queues]() -> result<std::vector<queue_depth>> { return probe(); });
  } else if (probes_.queue) {
    queues_ = std::make_shared<background_probe<std::vector<queue_depth>>>(
        [probe = probes_.queue, name = probes_.queue_name]() -> result<std::vector<queue_depth>> {
          return std::vector<queue_depth>{queue_depth{name, probe()}};
        });
  }
  if (probes_.matching)
    matching_ = std::make_shared<background_probe<matching_figures>>(probes_.matching);
  if (probes_.outbox)
    outbox_ = std::make_shared<background_probe<outbox_figures>>(probes_.outbox);
  if (probes_.tenants)
    tenants_ = std::make_shared<background_probe<std::vector<tenant_work>>>(probes_.tenants);
  auto& svr = *server_;
  // On the polling thread: answered however busy the handler threads are.
  http_server::route_options at_once;
  at_once.inline_handler = true;
  at_once.max_body = 0;
  svr.get(
      "/healthz", [](const request&, response& res) { res.set_content("ok\n", "text/plain"); },
      at_once);
  svr.get("/readyz", [this](const request&, response& res) {
    // The client learns which dependency is down; the detail (a database's host and port, a
    // queue's URL) goes to the log, once per change.
    auto not_ready = [&](const std::string& why, const std::string& detail = {}) {
      if (!detail.empty()) {
        std::lock_guard guard{not_ready_mtx_};
        if (detail != last_not_ready_)
          log::warn("admin: not ready", {{"reason", why}, {"error", detail}});
        last_not_ready_ = detail;
      }
      res.status = 503;
      res.set_content("not ready: " + why + "\n", "text/plain");
    };
    if (shutting_down_)
      return not_ready("shutting down");
    // Both probes run at once under one deadline.
    auto until = std::chrono::steady_clock::now() + probes_.deadline;
    std::optional<std::shared_future<result<void>>> database;
    std::optional<std::shared_future<result<queue_stats>>> queue;
    if (database_)
      database = database_->run();
    if (queue_)
      queue = queue_->run();
    if (database)
      if (auto ok = database_->answer(*database, until, probes_.deadline, "the database"); !ok)
        return not_ready("database unavailable", ok.error().describe());
    if (queue)
      if (auto q = queue_->answer(*queue, until, probes_.deadline, "the queue"); !q)
        return not_ready("queue unavailable", q.error().describe());
    if (shutting_down_)
      return not_ready("shutting down");
    {
      std::lock_guard guard{not_ready_mtx_};
      last_not_ready_.clear();
    }
    res.set_content("ready\n", "text/plain");
  });
  svr.get("/metrics", [this](const request&, response& res) {
    std::string out = probes_.metrics ? probes_.metrics() : std::string{};
    // The database's figures are asked together, under one deadline.
    auto until = std::chrono::steady_clock::now() + probes_.deadline;
    std::optional<std::shared_future<result<matching_figures>>> matching;
    std::optional<std::shared_future<result<outbox_figures>>> outbox;
    if (matching_)
      matching = matching_->run();
    if (outbox_)
      outbox = outbox_->run();
    std::optional<std::shared_future<result<std::vector<tenant_work>>>> tenants;
    if (tenants_)
      tenants = tenants_->run();
    if (queues_)
      out += queue_prometheus(
          queues_->answer(queues_->run(), until, probes_.deadline, "the queues"));
    if (matching)
      out += matching_prometheus(
          matching_->answer(*matching, until, probes_.deadline, "the database"));
    if (outbox)
      out += outbox_prometheus(outbox_->answer(*outbox, until, probes_.deadline, "the database"));
    if (tenants)
      out += tenant_work_prometheus(
          tenants_->answer(*tenants, until, probes_.deadline, "the database"));
    out += "# HELP ingestd_shutting_down Whether the node is draining (SIGTERM received).\n";
    out += "# TYPE ingestd_shutting_down gauge\n";
    out += "ingestd_shutting_down " + std::string{shutting_down_ ? "1" : "0"} + "\n";
    res.set_content(out, "text/plain; version=0.0.4; charset=utf-8");
  });
  if (probes_.drain) {
    // The token is checked on the headers: a body is never read for a caller without it.
    http_server::route_options drain;
    drain.max_body = 4096;
    drain.before_body = [this](const request& req, response& res) {
      if (probes_.drain_token.empty()) {
        res.status = 403;
        res.set_content("POST /drain needs INGESTD_ADMIN_TOKEN set on the node\n", "text/plain");
        return false;
      }
      if (!http_server::secrets_equal(req.get_header_value("Authorization"),
                                      "Bearer " + probes_.drain_token)) {
        res.status = 401;
        res.set_header("WWW-Authenticate", "Bearer");
        res.set_content("unauthorized\n", "text/plain");
        return false;
      }
      return true;
    };
    svr.post(
        "/drain",
        [this](const request& req, response& res) {
          log::info("drain requested on the admin endpoint", {{"remote_addr", req.remote_addr}});
          probes_.drain();
          res.status = 202;
          res.set_content("draining\n", "text/plain");
        },
        drain);
  }
}

admin_server::~admin_server() {
  stop();
}

void admin_server::mount(const std::function<void(http_server::server&)>& routes, int threads) {
  routes(*server_);
  server_->add_worker_threads(threads);
}

result<void> admin_server::start() {
  if (auto up = server_->start(); !up)
    return up.error();
  bound_port_ = server_->port();
  auto& limits = server_->options().limits;
  log::info(
      "admin endpoint listening",
      {{"bind", bind_},
       {"port", bound_port_},
       {"max_connections", static_cast<int64_t>(limits.max_connections)},
       {"max_connections_per_address", static_cast<int64_t>(limits.max_connections_per_address)},
       {"header_timeout_seconds", static_cast<int64_t>(limits.header_timeout.count())},
       {"request_timeout_seconds", static_cast<int64_t>(limits.request_timeout.count())}});
  return {};
}

void admin_server::stop() {
  if (server_)
    server_->stop();
}

} // namespace ingestd
