// The admin endpoint over cpp-httplib: liveness, readiness (database and queue reachable, not
// shutting down) and the Prometheus exposition (worker metrics plus the queue's figures).
#include "admin/admin_server.hpp"

#include <httplib.h>

#include "adapters/support/log.hpp"

namespace ingestd {

std::string queue_prometheus(const result<queue_stats>& stats) {
  std::string out;
  out += "# HELP ingestd_queue_up Whether the ingest queue answered the last depth query.\n";
  out += "# TYPE ingestd_queue_up gauge\n";
  out += "ingestd_queue_up " + std::string{stats ? "1" : "0"} + "\n";
  if (!stats)
    return out;
  out += "# HELP ingestd_queue_messages Messages in the ingest queue, by state.\n";
  out += "# TYPE ingestd_queue_messages gauge\n";
  out += "ingestd_queue_messages{state=\"visible\"} " + std::to_string(stats->visible) + "\n";
  out += "ingestd_queue_messages{state=\"in_flight\"} " + std::to_string(stats->in_flight) + "\n";
  out += "ingestd_queue_messages{state=\"delayed\"} " + std::to_string(stats->delayed) + "\n";
  out += "# HELP ingestd_queue_oldest_message_age_seconds Age of the oldest message in the ingest queue.\n";
  out += "# TYPE ingestd_queue_oldest_message_age_seconds gauge\n";
  out += "ingestd_queue_oldest_message_age_seconds " + std::to_string(stats->oldest_age_seconds) + "\n";
  return out;
}

admin_server::admin_server(std::string bind, int port, admin_probes probes)
  : bind_(std::move(bind)), port_(port), probes_(std::move(probes)),
    server_(std::make_unique<httplib::Server>()) {
  auto& svr = *server_;
  // Probes and scrapes are few: two threads, not cpp-httplib's default of eight or more.
  svr.new_task_queue = [] { return new httplib::ThreadPool(2); };
  svr.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  svr.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    auto not_ready = [&](const std::string& why) {
      res.status = 503;
      res.set_content("not ready: " + why + "\n", "text/plain");
    };
    if (shutting_down_)
      return not_ready("shutting down");
    if (probes_.database)
      if (auto ok = probes_.database(); !ok)
        return not_ready("database: " + ok.error().describe());
    if (probes_.queue)
      if (auto q = probes_.queue(); !q)
        return not_ready("queue: " + q.error().describe());
    if (shutting_down_)
      return not_ready("shutting down");
    res.set_content("ready\n", "text/plain");
  });
  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::string out = probes_.metrics ? probes_.metrics() : std::string{};
    if (probes_.queue)
      out += queue_prometheus(probes_.queue());
    out += "# HELP ingestd_shutting_down Whether the node is draining (SIGTERM received).\n";
    out += "# TYPE ingestd_shutting_down gauge\n";
    out += "ingestd_shutting_down " + std::string{shutting_down_ ? "1" : "0"} + "\n";
    res.set_content(out, "text/plain; version=0.0.4; charset=utf-8");
  });
}

admin_server::~admin_server() {
  stop();
}

result<void> admin_server::start() {
  auto& svr = *server_;
  if (port_ == 0)
    bound_port_ = svr.bind_to_any_port(bind_.c_str());
  else
    bound_port_ = svr.bind_to_port(bind_.c_str(), port_) ? port_ : -1;
  if (bound_port_ <= 0)
    return error::make_permanent("admin.bind", "cannot listen on " + bind_ + ":" + std::to_string(port_));
  thread_ = std::thread{[this] {
    server_->listen_after_bind();
    listen_returned_ = true;
  }};
  // httplib's stop() does nothing before the accept loop runs: wait for it, so that a SIGTERM
  // right after start-up is not lost (and the join in stop() does not hang).
  while (!server_->is_running() && !listen_returned_)
    std::this_thread::yield();
  log::info("admin endpoint listening", {{"bind", bind_}, {"port", bound_port_}});
  return {};
}

void admin_server::stop() {
  if (server_)
    server_->stop();
  if (thread_.joinable())
    thread_.join();
}

} // namespace ingestd
