// What every actor of one worker shares: the ports it talks through, the settings it runs by,
// the metrics it counts, and the observer the embedding program listens with.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/metrics.hpp"
#include "adapters/db/repository.hpp"
#include "adapters/llm/extractor.hpp"
#include "adapters/ocr/transcriber.hpp"
#include "adapters/queue/queue.hpp"
#include "adapters/storage/object_store.hpp"
#include "messages/extraction.hpp"

namespace ingestd {

struct job_outcome;

/// The adapters a worker runs with. The daemon builds them from configuration; a test or an
/// embedding program passes its own.
struct worker_ports {
  std::shared_ptr<queue> ingest_queue;
  std::shared_ptr<object_store> storage;
  std::shared_ptr<repository> db;
  std::shared_ptr<transcriber> ocr;
  std::shared_ptr<extractor> extract;
  /// The quality gate (seed 000 step 9); the default is quality_gate's evaluate().
  std::function<gate_verdict(const extraction&)> gate;
  /// Called when an ingestion ends `failed` (the webhook notification); may be empty.
  std::function<void(const claimed_ingestion&, const error&, int32_t attempts)> on_failed;
};

struct worker_settings {
  std::string worker_id = "ingestd";
  int max_in_flight = 1000;
  int max_messages = 10;
  std::chrono::seconds wait_time{20};
  /// Visibility asked for at receive; the heartbeat extends it right after the claim.
  std::chrono::seconds visibility_timeout{60};
  /// How long a claim lasts without renewal (seed 000's stale threshold).
  std::chrono::seconds lease{300};
  std::chrono::seconds heartbeat_rate{60};
  std::chrono::seconds heartbeat_extension{300};
  int heartbeat_actors = 2;
  int max_attempts = 3;
  /// Visibility before the next attempt, by attempts so far (the last entry repeats).
  std::vector<std::chrono::seconds> retry_backoff{std::chrono::seconds{300}, std::chrono::seconds{1800}};
  /// true: at max attempts leave the message for the queue's dead-letter redrive instead of
  /// deleting it.
  bool dead_letter_on_final_failure = false;
  /// Deadline of any single step of a job (one port call).
  std::chrono::seconds step_timeout{300};
  double quality_threshold = 0.7;
  size_t max_file_bytes = 20u << 20;
  std::chrono::seconds shutdown_grace{600};
  std::chrono::seconds sweeper_interval{60};
  /// Ingestions due longer ago than this with nobody holding them are re-enqueued.
  std::chrono::seconds stale_threshold{300};
  /// CPU pool workers.
  int cpu_workers = 1;
  int cpu_backlog = 10000;
};

/// Receives every job's outcome (from an actor thread: keep it short and thread-safe).
using worker_observer = std::function<void(const job_outcome&)>;

struct worker_context {
  worker_ports ports;
  worker_settings settings;
  std::shared_ptr<worker_metrics> metrics = std::make_shared<worker_metrics>();
  worker_observer observer;
};

} // namespace ingestd
