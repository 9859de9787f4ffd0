// The node's settings, read from the configuration: the one place a configuration key becomes a
// setting of the lifecycle.
#include "actors/node_context.hpp"

#include <algorithm>

#include <unistd.h>

#include "actors/cpu_pool.hpp"
#include "config/config.hpp"

namespace ingestd {

namespace {

/// Work items that may wait for a CPU pool worker: a bound on memory, not a tuning knob.
constexpr int cpu_backlog_limit = 10000;

/// The sweeper's threshold is at least this: it revives work that lost its message, and a healthy
/// message may wait in a backlog far longer than a lease.
constexpr std::chrono::minutes min_stale_threshold{5};

} // namespace

node_settings make_node_settings(const config& cfg) {
  using std::chrono::seconds;
  node_settings s;
  s.worker_id = cfg.worker.id;
  if (s.worker_id.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    s.worker_id = std::string{host} + "-" + std::to_string(::getpid());
  }
  s.max_in_flight = cfg.worker.max_in_flight;
  s.max_messages = cfg.queue.max_messages;
  s.wait_time = seconds{cfg.queue.wait_time_seconds};
  s.visibility_timeout = seconds{cfg.queue.visibility_timeout_seconds};
  s.lease = seconds{cfg.worker.lease_seconds};
  s.stale_threshold = std::max<seconds>(s.lease, min_stale_threshold);
  s.heartbeat_rate = seconds{cfg.worker.heartbeat_rate_seconds};
  s.heartbeat_extension = seconds{cfg.worker.heartbeat_extension_seconds};
  s.heartbeat_actors = cfg.worker.heartbeat_pool_size;
  s.step_timeout = seconds{cfg.worker.step_timeout_seconds};
  s.shutdown_grace = seconds{cfg.worker.shutdown_grace_seconds};
  s.sweeper_interval = seconds{cfg.worker.sweeper_interval_seconds};
  s.cpu_workers = cpu_pool_size(cfg.worker.preprocessing_pool_size_dec);
  s.cpu_backlog = cpu_backlog_limit;
  s.cpu_deadline = seconds{cfg.transcription.timeout_seconds};
  s.capacity_slots = cfg.worker.capacity_slots;
  s.lifetime_units = cfg.worker.lifetime_units;
  s.exit_after_idle_polls = cfg.worker.exit_after_idle_polls;
  return s;
}

node_settings default_node_settings() {
  return make_node_settings(default_config());
}

node_admission::limits node_settings::admission_limits() const {
  return node_admission::limits{max_in_flight, capacity_slots, lifetime_units, cpu_workers,
                                cpu_deadline};
}

void held_claims::add(const uuid& id) {
  std::lock_guard guard{mtx_};
  ids_.insert(id);
}

void held_claims::remove(const uuid& id) {
  std::lock_guard guard{mtx_};
  ids_.erase(id);
}

std::vector<uuid> held_claims::ids() const {
  std::lock_guard guard{mtx_};
  return {ids_.begin(), ids_.end()};
}

} // namespace ingestd
