// The worker's settings, read from the configuration: the one place a configuration key becomes
// a worker setting.
#include "actors/worker_context.hpp"

#include <algorithm>

#include <unistd.h>

#include "actors/cpu_pool.hpp"

namespace ingestd {

namespace {

/// Work items that may wait for a CPU pool worker: a bound on memory, not a tuning knob.
constexpr int cpu_backlog_limit = 10000;

/// The sweeper's threshold is at least this: it rescues ingestions that lost their message, and a
/// healthy message may wait in a backlog far longer than a lease.
constexpr std::chrono::minutes min_stale_threshold{5};

} // namespace

worker_settings make_worker_settings(const config& cfg) {
  using std::chrono::seconds;
  worker_settings s;
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
  s.max_attempts = cfg.worker.max_retry_attempts;
  for (auto x : cfg.worker.retry_backoff_seconds)
    s.retry_backoff.push_back(seconds{x});
  s.dead_letter_on_final_failure = cfg.queue.max_receive_count > 0;
  s.step_timeout = seconds{cfg.worker.step_timeout_seconds};
  s.quality_threshold = cfg.transcription.ocr_quality_threshold;
  s.max_file_bytes = static_cast<size_t>(cfg.transcription.max_file_bytes);
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

worker_settings default_worker_settings() { return make_worker_settings(default_config()); }

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
