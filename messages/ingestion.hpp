// What the pipeline reads and writes about one ingestion: the claim, the fenced writes that
// follow it, and the audit events.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "messages/error.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// An ingestion this worker has claimed, joined with its document (one round trip).
struct claimed_ingestion {
  uuid ingestion_id;
  uuid document_id;
  uuid tenant_id;
  /// Fencing token issued by the claim; every later write carries it.
  uuid claim_token;
  /// Attempts already recorded before this one (0 on the first attempt).
  int32_t attempt_count = 0;
  /// Storage key of the original file, e.g. "documents/{document_id}.pdf".
  std::string file_path;
  std::string mime_type;
  /// Storage key of a transcription stored by an earlier attempt; empty if none.
  std::string transcription_file_path;
  /// Not claimed: this claim found the crash that reached max_attempts and failed the ingestion
  /// as poison (no claim_token; attempt_count is the attempts made). Said once, to the claimer
  /// that failed it, which notifies the failure as for any final failure.
  bool poisoned = false;
  /// Not claimed: the document's hash is in the known-file set, and this claim ended the
  /// ingestion `skipped` (reason known_file). Said once, to the claimer that skipped it.
  bool skipped = false;
  /// The size class the ingestion runs in ("small", "large"; migration 011) and attempt_count
  /// when it entered that class: attempt_count - class_attempts_base attempts were made in it.
  std::string size_class = "small";
  int32_t class_attempts_base = 0;
  /// The providers a reprocess chose for this ingestion (migration 013): a transcription.provider
  /// ("tesseract", "document_ai") and an extraction.provider ("local", "llm") name. Empty: the
  /// node's configured one.
  std::string transcription_provider;
  std::string extraction_provider;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, claimed_ingestion& x) {
  return f(caf::meta::type_name("claimed_ingestion"), x.ingestion_id, x.document_id, x.tenant_id,
           x.claim_token, x.attempt_count, x.file_path, x.mime_type, x.transcription_file_path,
           x.poisoned, x.skipped, x.size_class, x.class_attempts_base, x.transcription_provider,
           x.extraction_provider);
}

/// Recorded on the ingestion once the transcription is stored (seed 000, step 7).
struct transcription_record {
  std::string transcription_file_path;
  /// Empty when no preprocessing was applied.
  std::string preprocessed_file_path;
  double quality_score = 0;
};

/// The successful outcome (seed 000, step 10); the trigger copies it to the document.
struct completion_record {
  /// The extracted invoice as a JSON object.
  std::string structured_data;
  bool valid_structured_data = true;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::string model;
  /// Why a person must look at it (e.g. "text_unavailable: ..."): recorded as the ingestion's
  /// last_error, and the document goes to review. Empty: nothing to add.
  std::string review_reason;
};

/// A failed attempt (seed 000's failure handling, with DESIGN §5's classification).
struct failure_record {
  ingestd::error error;
  /// Attempts after which the ingestion is failed for good; a permanent error fails at once.
  int32_t max_attempts = 3;
  /// Extraction output to keep for the human reviewer (e.g. a gate failure); may be empty.
  std::string structured_data;
  /// The small class gives up on it: it moves to the large class (size_class 'large', its
  /// attempts there counted from now) and stays in progress whatever the error (seed 004).
  bool escalate = false;
};

/// What recording a failed attempt left behind.
struct failure_outcome {
  int32_t attempt_count = 0;
  /// true when the ingestion is now `failed` (final); false when it stays `in-progress`.
  bool failed = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, failure_outcome& x) {
  return f(caf::meta::type_name("failure_outcome"), x.attempt_count, x.failed);
}

/// One row of the audit trail (table ingestion_event).
struct audit_event {
  uuid ingestion_id;
  /// Pipeline step: "parse", "claim", "fetch", "transcribe", "store", "extract", "gate",
  /// "complete", "fail", "release", "ack", ...
  std::string step;
  /// "ok", "skipped", "transient", "permanent", "claim_lost", ...
  std::string outcome;
  std::string detail;
  int64_t duration_ms = 0;
  std::string worker_id;
  /// Unix milliseconds.
  int64_t at_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, audit_event& x) {
  return f(caf::meta::type_name("audit_event"), x.ingestion_id, x.step, x.outcome, x.detail,
           x.duration_ms, x.worker_id, x.at_ms);
}

/// Where an ingestion stands, as the job needs to know when its claim did not succeed: it deletes
/// its message only when the outcome is final or the id is unknown (DESIGN §5: nothing is deleted
/// until the database says the outcome is final).
enum class ingestion_state : uint8_t {
  /// in-progress, and no live lease: claimable.
  claimable,
  /// in-progress, with another worker's live lease.
  held,
  completed,
  failed,
  /// Ended `skipped` (a known file): final, as completed.
  skipped,
  /// No such ingestion.
  unknown,
  /// Cancelled (ingestd cancel, DELETE /v1/ingestions/{id}): final.
  cancelled,
};

/// A claim whose lease the heartbeat renews.
struct lease_ref {
  uuid ingestion_id;
  uuid claim_token;
};

} // namespace ingestd
