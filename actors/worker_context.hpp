// What every actor of one worker shares: the ports it talks through, the settings it runs by,
// the metrics it counts, and the observer the embedding program listens with.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "actors/metrics.hpp"
#include "actors/stage.hpp"
#include "adapters/containers/unpacker.hpp"
#include "adapters/db/container_repository.hpp"
#include "adapters/db/matching_repository.hpp"
#include "adapters/db/repository.hpp"
#include "adapters/extraction/extractor.hpp"
#include "adapters/matching/matcher.hpp"
#include "adapters/ocr/transcriber.hpp"
#include "adapters/queue/queue.hpp"
#include "adapters/storage/object_store.hpp"
#include "adapters/support/cpu_executor.hpp"
#include "config/config.hpp"
#include "messages/extraction.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

struct job_outcome;

/// The adapters a worker runs with. The daemon builds them from configuration; a test or an
/// embedding program passes its own.
struct worker_ports {
  std::shared_ptr<queue> ingest_queue;
  /// The matching stage's queue (null when matching is off).
  std::shared_ptr<queue> match_queue;
  /// The large size class's queue (null when classes.enabled is off); ingest_queue is then the
  /// small class's.
  std::shared_ptr<queue> large_ingest_queue;
  std::shared_ptr<object_store> storage;
  std::shared_ptr<repository> db;
  std::shared_ptr<transcriber> ocr;
  std::shared_ptr<extractor> extract;
  /// Every provider the node can run, by its configuration name (config/providers.hpp), `ocr`
  /// and `extract` among them: an ingestion for which a reprocess chose one runs with it
  /// (migration 013); one whose choice is missing here fails for review.
  std::map<std::string, std::shared_ptr<transcriber>, std::less<>> transcribers;
  std::map<std::string, std::shared_ptr<extractor>, std::less<>> extractors;
  /// The node's CPU pool, for a job's own CPU work (job_handle::on_cpu); null runs it inline
  /// (unit tests on the deterministic scheduler).
  std::shared_ptr<cpu_executor> cpu;
  /// The quality gate (seed 000 step 9); the default is quality_gate's evaluate().
  std::function<gate_verdict(const extraction&)> gate;
  /// Called when an ingestion ends `failed` (the webhook notification); may be empty. Called by
  /// the job, or on the database thread that answers the claim that failed it as poison: keep it
  /// short and thread-safe.
  std::function<void(const claimed_ingestion&, const error&, int32_t attempts)> on_failed;
  /// The matching stage (seed 003): its rows and its decision. Null when the node runs no
  /// matching.
  std::shared_ptr<matching_repository> matching;
  std::shared_ptr<matcher> match;
  /// Called when a document's matching ends `failed` (the webhook notification); may be empty.
  std::function<void(const matching_claim&, const error&, int32_t attempts)> on_matching_failed;
  /// The unpack stage (issue 14): its queue, its database writes and its readers. Null when the
  /// node runs no unpacking.
  std::shared_ptr<queue> unpack_queue;
  std::shared_ptr<container_repository> containers;
  std::shared_ptr<container_unpacker> unpacker;
};

/// How a worker runs, taken from the configuration (make_worker_settings): no value here has a
/// default of its own. Tests and benches start from default_worker_settings() and change a few.
struct worker_settings {
  std::string worker_id;
  int max_in_flight{};
  int max_messages{};
  std::chrono::seconds wait_time{};
  /// Visibility asked for at receive; the heartbeat extends it right after the claim.
  std::chrono::seconds visibility_timeout{};
  /// How long a claim lasts without renewal (worker.lease_seconds); the heartbeat renews it every
  /// heartbeat_rate and extends the message's visibility in step (heartbeat_extension).
  std::chrono::seconds lease{};
  std::chrono::seconds heartbeat_rate{};
  std::chrono::seconds heartbeat_extension{};
  int heartbeat_actors{};
  int max_attempts{};
  /// Visibility before the next attempt, by attempts so far (the last entry repeats).
  std::vector<std::chrono::seconds> retry_backoff;
  /// true: at max attempts leave the message for the queue's dead-letter redrive instead of
  /// deleting it.
  bool dead_letter_on_final_failure{};
  /// Deadline of any single step of a job (one port call).
  std::chrono::seconds step_timeout{};
  double quality_threshold{};
  size_t max_file_bytes{};
  std::chrono::seconds shutdown_grace{};
  std::chrono::seconds sweeper_interval{};
  /// Ingestions due longer ago than this with nobody holding them are re-enqueued (the lease,
  /// at least 5 minutes).
  std::chrono::seconds stale_threshold{};
  /// CPU pool workers, and how many items may wait for one.
  int cpu_workers{};
  int cpu_backlog{};
  /// The OCR deadline (transcription.timeout_seconds): the poller admits work only while the CPU
  /// pool's backlog can be worked off within half of it.
  std::chrono::seconds cpu_deadline{};
  /// Capacity and lifetime (seed 004): the weighted slots the stages share (0: no budget; the
  /// in-flight limits alone), the units of work (slot weights admitted) after which the node
  /// drains and exits 0, and the empty polls in a row after which it does (0: never).
  int capacity_slots{};
  int64_t lifetime_units{};
  int exit_after_idle_polls{};
};

/// The worker's settings from the configuration (an empty worker.id becomes hostname-pid).
worker_settings make_worker_settings(const config& cfg);

/// make_worker_settings(default_config()).
worker_settings default_worker_settings();

/// The ingestions whose claims this node holds, as its heartbeats track them; readable from any
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

struct worker_context {
  worker_ports ports;
  /// The stages this node serves, each with its own poller (actors/stage.hpp). Empty: the
  /// ingest stage over `ports` alone (start_worker fills it in).
  std::vector<std::shared_ptr<const stage>> stages;
  /// The configuration's defaults until the embedding program sets them.
  worker_settings settings = default_worker_settings();
  std::shared_ptr<worker_metrics> metrics = std::make_shared<worker_metrics>();
  std::shared_ptr<held_claims> claims = std::make_shared<held_claims>();
  worker_observer observer;
  /// Asks the node to drain and stop (a lifetime or idle limit reached; `why` for the log).
  /// start_worker sets it to a shutdown request to the coordinator; called from any actor.
  std::function<void(const std::string& why)> request_drain;
};

} // namespace ingestd
