// The ingest stage: an ingestion's file fetched, transcribed (or a stored transcription reused),
// its fields extracted and checked by the quality gate, the result stored with the work item's
// completion; the document's matching follows when the match stage is on. Size classes are this
// stage's: the stage runs once per class a node serves, each with its own queue, deadlines and
// weight, and the small class moves what it cannot finish to the large one.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/stage.hpp"
#include "adapters/db/ingest_repository.hpp"
#include "adapters/db/learning_repository.hpp"
#include "adapters/db/tenant_cache.hpp"
#include "adapters/extraction/extractor.hpp"
#include "adapters/ocr/transcriber.hpp"
#include "adapters/storage/object_store.hpp"
#include "messages/extraction.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

class budget_ledger;
class confidence_calibration;
struct config;
struct stage_env;
struct queue_spec;

/// The adapters the ingest stage runs with.
struct ingest_ports {
  std::shared_ptr<ingest_repository> db;
  std::shared_ptr<object_store> storage;
  /// The configured providers.
  std::shared_ptr<transcriber> ocr;
  std::shared_ptr<extractor> extract;
  /// Every provider the node can run, by its configuration name (config/providers.hpp), the
  /// configured ones among them: an ingestion for which a reprocess chose one runs with it; one
  /// whose choice is missing here fails for review.
  std::map<std::string, std::shared_ptr<transcriber>, std::less<>> transcribers;
  std::map<std::string, std::shared_ptr<extractor>, std::less<>> extractors;
  /// The quality gate; empty: quality_gate's evaluate().
  std::function<gate_verdict(const extraction&)> gate;
  /// The tenants' monthly budgets, asked before a paid provider reads a document; null: none.
  std::shared_ptr<budget_ledger> budget;
  /// review.auto_approve: whether a document the gate passed goes through; null: it does.
  std::shared_ptr<confidence_calibration> calibration;
  /// review.learn: what each tenant's reviewers taught about its suppliers; null: nothing applied.
  std::shared_ptr<const tenant_cache<std::vector<supplier_fact>>> knowledge;
};

/// One size class of the stage, or the stage without classes (name empty).
struct ingest_class {
  /// "small", "large", or empty.
  std::string name;
  std::shared_ptr<ingestd::queue> queue;
  std::string queue_name;
  /// Slots of worker.capacity_slots one of its jobs takes (0: none).
  int weight = 1;
  /// Step and OCR deadlines (0: worker.step_timeout_seconds, transcription.timeout_seconds).
  std::chrono::seconds step_timeout{0};
  std::chrono::seconds ocr_timeout{0};
  /// The small class: the large class's queue, where what it gives up on goes (a timeout,
  /// class_max_attempts failures, a crash). Empty: it moves nothing.
  std::string move_to_queue;
  /// Failed attempts in the class before it moves the work (small) or fails it (large); 0: the
  /// stage has no classes and max_attempts counts.
  int class_max_attempts = 0;
  /// 0: the stage's limit.
  int max_in_flight = 0;
};

struct ingest_settings {
  /// 0: worker.max_in_flight.
  int max_in_flight = 0;
  int max_attempts = 3;
  std::vector<std::chrono::seconds> retry_backoff{std::chrono::minutes{5},
                                                  std::chrono::minutes{30}};
  /// Leave a message that failed for good to the queue's dead-letter redrive.
  bool dead_letter = false;
  /// Below this OCR quality, a scan is preprocessed and read again.
  double quality_threshold = 0.6;
  size_t max_file_bytes = size_t{50} << 20;
  /// The match stage's queue: a completed ingestion's document is matched next. Empty: no
  /// matching.
  std::string match_queue;
  /// review.sample_rate: the share of documents the gate passes that go to review for a check.
  double review_sample_rate = 0;
};

/// The reason a document the gate passed goes to review for a check; `ingestd status` and the
/// desk's "sample" reason know it by its start.
inline constexpr const char* sampled_reason
    = "sampled: a check of what goes through without a person (review.sample_rate)";

/// Whether the document is one of the `rate` share checked by a person: decided by its id alone,
/// so that every node, and every attempt, decides the same.
bool sampled_for_review(const uuid& document_id, double rate);

/// The stage for one class (or without classes) over `ports`.
std::shared_ptr<stage> make_ingest_stage(std::shared_ptr<const ingest_ports> ports,
                                         const ingest_settings& settings, const ingest_class& cls);

/// The stage's queues: the ingest queue, and the large class's with size classes.
std::vector<queue_spec> ingest_queues(const config& cfg);

/// The stage as the configuration asks for it: one instance per size class the node serves.
result<std::vector<std::shared_ptr<const stage>>> ingest_stages(stage_env& env);

} // namespace ingestd
