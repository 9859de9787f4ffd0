// The ingest stage (seed 000): claim an ingestion, fetch its file, transcribe it (or reuse a
// stored transcription), extract the fields, run the quality gate and complete it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "actors/stage.hpp"
#include "actors/worker_context.hpp"

namespace ingestd {

/// The ingest stage over the context's ports (ingest_queue, db, storage, ocr, extract) and
/// settings (max_in_flight, max_attempts, retry_backoff, dead_letter_on_final_failure).
std::shared_ptr<stage> make_ingest_stage(const worker_context& ctx);

/// One size class of the ingest stage (seed 004): its queue, weight and deadlines.
struct size_class_settings {
  /// "small" or "large".
  std::string name;
  std::shared_ptr<ingestd::queue> queue;
  std::string queue_name;
  /// Slots of worker.capacity_slots one of its jobs takes (0: none).
  int weight = 1;
  /// Step and OCR deadlines (0: worker.step_timeout_seconds, transcription.timeout_seconds).
  std::chrono::seconds step_timeout{0};
  std::chrono::seconds ocr_timeout{0};
  /// The small class: the large class's queue (escalation); null for the large class.
  std::shared_ptr<ingestd::queue> escalate_to;
  /// Failed attempts in the class before it escalates (small) or fails for good (large).
  int class_max_attempts = 2;
  /// 0: the ingest stage's limit.
  int max_in_flight = 0;
};

/// The ingest stage for one size class: make_ingest_stage's lifecycle and steps with the class's
/// queue, deadlines, weight and escalation (stage name "ingest.small", "ingest.large").
std::shared_ptr<stage> make_ingest_class_stage(const worker_context& ctx, const size_class_settings& cls);

} // namespace ingestd
