// What every actor of one node shares: the claimed-work port, the CPU pool, the settings the
// lifecycle runs by, the admission, the metrics, the stages the node serves, and the observer the
// embedding program listens with. Nothing here is a stage's own: each stage carries its ports in
// its module (actors/stage.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "actors/admission.hpp"
#include "actors/deadlines.hpp"
#include "actors/metrics.hpp"
#include "actors/stage.hpp"
#include "adapters/db/work_repository.hpp"
#include "adapters/support/cpu_executor.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

struct config;
struct job_outcome;

/// How the node runs its lifecycle, taken from the configuration (make_node_settings): no value
/// here has a default of its own. Tests and benches start from default_node_settings().
struct node_settings {
  std::string worker_id;
  int max_in_flight{};
  int max_messages{};
  std::chrono::seconds wait_time{};
  /// Visibility asked for at receive; the heartbeat extends it from its first tick (at once, if
  /// less than two heartbeats of it would be left then).
  std::chrono::seconds visibility_timeout{};
  /// How long a claim lasts without renewal (worker.lease_seconds); the heartbeat renews it every
  /// heartbeat_rate and extends the message's visibility in step (heartbeat_extension).
  std::chrono::seconds lease{};
  std::chrono::seconds heartbeat_rate{};
  std::chrono::seconds heartbeat_extension{};
  int heartbeat_actors{};
  /// Deadline of any single step of a job (one port call).
  std::chrono::seconds step_timeout{};
  std::chrono::seconds shutdown_grace{};
  std::chrono::seconds sweeper_interval{};
  /// Work items due longer ago than this with nobody holding them get a new message (the
  /// lease, at least 5 minutes).
  std::chrono::seconds stale_threshold{};
  /// CPU pool workers, and how many items may wait for one.
  int cpu_workers{};
  int cpu_backlog{};
  /// The OCR deadline (transcription.timeout_seconds): also how long a step waits for a CPU
  /// worker.
  std::chrono::seconds cpu_deadline{};
  /// Capacity and lifetime: the weighted slots the stages share (0: no budget), the units of
  /// work after which the node drains and exits 0, and the empty receives in a row after which
  /// it does (0: never).
  int capacity_slots{};
  int64_t lifetime_units{};
  int exit_after_idle_polls{};

  node_admission::limits admission_limits() const;
};

/// The node's settings from the configuration (an empty worker.id becomes hostname-pid).
node_settings make_node_settings(const config& cfg);

/// make_node_settings(default_config()).
node_settings default_node_settings();

/// The work items whose claims this node holds, as its heartbeats track them; readable from any
/// thread (a shutdown that runs out of time names them).
class held_claims {
public:
  void add(const uuid& id);
  void remove(const uuid& id);
  std::vector<uuid> ids() const;

private:
  mutable std::mutex mtx_;
  std::unordered_set<uuid, uuid_hash> ids_;
};

/// Receives every job's outcome (from an actor thread: keep it short and thread-safe).
using worker_observer = std::function<void(const job_outcome&)>;

struct node_context {
  std::shared_ptr<work_repository> work;
  /// The node's CPU pool, for a job's own CPU work (job_handle::on_cpu); null runs it inline
  /// (unit tests on the deterministic scheduler).
  std::shared_ptr<cpu_executor> cpu;
  /// The stages this node serves, each with its own poller.
  std::vector<std::shared_ptr<const stage>> stages;
  /// The configuration's defaults until the embedding program sets them.
  node_settings settings = default_node_settings();
  std::shared_ptr<node_admission> admission
      = std::make_shared<node_admission>(settings.admission_limits());
  std::shared_ptr<worker_metrics> metrics = std::make_shared<worker_metrics>();
  std::shared_ptr<held_claims> claims = std::make_shared<held_claims>();
  /// The jobs' step deadlines, which the node's deadline sweep enforces.
  std::shared_ptr<step_deadlines> deadlines = std::make_shared<step_deadlines>();
  worker_observer observer;
  /// Asks the node to drain and stop (a lifetime or idle limit reached; `why` for the log).
  /// The node's builder sets it to a shutdown request to its coordinator; any actor may call it.
  std::function<void(const std::string& why)> request_drain;
};

} // namespace ingestd
