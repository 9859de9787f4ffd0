// The admin HTTP endpoint: /healthz, /readyz and /metrics on its own port, and
// POST /drain with a token, served by http_server (libmicrohttpd) on threads of its own (never on
// CAF's scheduler). /healthz runs on the server's polling thread, so that neither slow clients
// nor busy handlers delay it; POST /drain's token is checked before its body is read.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "adapters/db/intake_repository.hpp"
#include "adapters/db/outbox_repository.hpp"
#include "adapters/http_server/server.hpp"
#include "adapters/queue/queue.hpp"
#include "messages/result.hpp"

namespace ingestd {

/// The matching stage's figures in the database, for /metrics.
struct matching_figures {
  /// Documents per matching_status ("pending", "in-progress", "succeeded", "failed").
  std::vector<std::pair<std::string, int64_t>> by_status;
  /// Matching in progress for longer than 10 minutes: a crashed matching worker.
  int64_t in_progress_over_10_minutes = 0;
  int64_t oldest_in_progress_seconds = 0;
};

/// One queue's depth, for /metrics.
struct queue_depth {
  /// The queue's name (ingestd_queue_messages{queue=...}).
  std::string queue;
  result<queue_stats> stats{error::make_transient("admin.no_answer", "not asked")};
};

/// How the admin endpoint learns what it reports. The database and queue probes may block: each
/// runs on a thread of its own, and a request waits for them up to `deadline`.
struct admin_probes {
  /// A cheap database round trip; an error makes /readyz answer 503.
  std::function<result<void>()> database;
  /// The ingest queue's depth; an error makes /readyz answer 503.
  std::function<result<queue_stats>()> queue;
  /// The depth of every queue the node's stages read (each stage's, each size class's), for
  /// /metrics; empty: the ingest queue's (`queue`) alone, under `queue_name`.
  std::function<std::vector<queue_depth>()> queues;
  std::string queue_name = "ingest";
  /// The matching figures (optional); an error sets ingestd_matching_up to 0, readiness unchanged.
  std::function<result<matching_figures>()> matching;
  /// The outbox's figures (optional, on nodes that relay); an error sets ingestd_outbox_up to 0.
  std::function<result<outbox_figures>()> outbox;
  /// The open work per tenant (optional); an error sets ingestd_tenant_work_up to 0.
  std::function<result<std::vector<tenant_work>>()> tenants;
  /// The worker's metrics in Prometheus text (may be empty).
  std::function<std::string()> metrics;
  /// POST /drain (with `Authorization: Bearer <drain_token>`): starts the node's drain, as
  /// `ingestd drain` does. Empty: the path answers 404.
  std::function<void()> drain;
  /// INGESTD_ADMIN_TOKEN; empty: POST /drain answers 403 (no unauthenticated drain).
  std::string drain_token;
  /// How long /readyz (and the queue figures of /metrics) wait for the database and the queue
  /// together; a probe that has not answered by then counts as failed.
  std::chrono::milliseconds deadline{std::chrono::seconds{5}};
};

/// The admin endpoint's HTTP limits (admin.allowed_hosts, admin.max_connections, ...).
struct admin_http_options {
  /// Host names the endpoint answers to besides loopback names and IP addresses ("*": any).
  std::vector<std::string> allowed_hosts;
  http_server::endpoint_limits limits{32, 8, std::chrono::seconds{10}, std::chrono::seconds{30},
                                      size_t{16} << 20};
};

/// The queue figures in Prometheus text, per queue: depth by state, oldest message age, and
/// whether the queue answered (ingestd_queue_up); `all` set when the depths could not be asked
/// at all (every queue down).
std::string queue_prometheus(const result<std::vector<queue_depth>>& all);

/// The matching figures in Prometheus text: documents by matching status, matching in progress
/// over 10 minutes, the oldest matching in progress, and whether the query answered.
std::string matching_prometheus(const result<matching_figures>& figures);

/// The outbox figures in Prometheus text: rows still to send, the oldest one's age, dead rows
/// kept, and whether the query answered (the rows declared dead are a counter of the worker's).
std::string outbox_prometheus(const result<outbox_figures>& figures);

/// The open work per tenant in Prometheus text: work items waiting and in flight by tenant and
/// stage (the database's view, the same on every node), and whether the query answered.
std::string tenant_work_prometheus(const result<std::vector<tenant_work>>& figures);

class admin_server {
public:
  admin_server(std::string bind, int port, admin_probes probes,
               const admin_http_options& http = {});
  ~admin_server();
  admin_server(const admin_server&) = delete;
  admin_server& operator=(const admin_server&) = delete;

  /// Lets another part serve under this port (the review desk under /review): `routes` registers
  /// its handlers on the server, and `threads` handler threads are added for them. Call before
  /// start().
  void mount(const std::function<void(http_server::server&)>& routes, int threads);

  /// Binds (port 0: any free port) and starts serving on its own thread.
  result<void> start();
  /// The bound port (after start()).
  int port() const { return bound_port_; }
  /// From now on /readyz answers 503 "shutting down" (SIGTERM received).
  void set_shutting_down() { shutting_down_ = true; }
  /// Stops serving and joins the thread (idempotent).
  void stop();

private:
  /// A probe that runs on a thread of its own, at most one run at a time.
  template <class T>
  class background_probe;

  std::string bind_;
  int port_;
  int bound_port_ = 0;
  admin_probes probes_;
  std::shared_ptr<background_probe<void>> database_;
  std::shared_ptr<background_probe<queue_stats>> queue_;
  std::shared_ptr<background_probe<std::vector<queue_depth>>> queues_;
  std::shared_ptr<background_probe<matching_figures>> matching_;
  std::shared_ptr<background_probe<outbox_figures>> outbox_;
  std::shared_ptr<background_probe<std::vector<tenant_work>>> tenants_;
  std::atomic<bool> shutting_down_{false};
  /// The last reason /readyz gave, so that a lasting one is logged once.
  std::mutex not_ready_mtx_;
  std::string last_not_ready_;
  std::unique_ptr<http_server::server> server_;
};

} // namespace ingestd
