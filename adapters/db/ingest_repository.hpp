// The ingest stage's database port: what its job reads of an ingestion after the claim, the
// transcription it records, and its outcome, written with the work item's completion in one
// transaction. Every write is fenced by the work item's claim (work_repository.hpp).
// Implemented by pg_ingest_repository.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/ingestion.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"
#include "messages/work.hpp"

namespace ingestd {

/// An ingestion joined with its document, as the ingest job needs it.
struct ingestion_details {
  /// Storage key of the original file, e.g. "documents/{document_id}.pdf".
  std::string file_path;
  std::string mime_type;
  /// Storage key of a transcription stored by an earlier attempt; empty if none.
  std::string transcription_file_path;
  /// The providers a reprocess chose for this ingestion: a transcription.provider
  /// ("tesseract", "document_ai") and an extraction.provider ("local", "llm") name. Empty: the
  /// node's configured one.
  std::string transcription_provider;
  std::string extraction_provider;
};

/// One ingestion's outcome: its result, and the work item's completion.
struct ingest_completion {
  work_outcome work;
  completion_record record;
};

/// Asynchronous: every call returns at once and calls its callback exactly once, from a
/// database thread. Connection problems are transient; a write whose claim no longer holds is
/// an error of class claim_lost.
class ingest_repository {
public:
  virtual ~ingest_repository() = default;

  /// The ingestion `id` (a work item's subject) and its document; a permanent error when it does
  /// not exist.
  virtual void load(uuid id, callback<ingestion_details> done) = 0;

  /// The stored transcription: transcription_file_path, preprocessed_file_path, quality score.
  /// A completion carries it (completion_record::transcription); this records it alone, for an
  /// attempt that ends without a result.
  virtual void record_transcription(claim_ref ref, transcription_record record, callback<void> done)
      = 0;

  /// Output of a failed attempt kept for the reviewer (the extraction the quality gate refused):
  /// the ingestion's structured_data, marked not valid.
  virtual void keep_output(claim_ref ref, std::string structured_data, callback<void> done) = 0;

  /// For several ingestions in one round trip: each one's result (structured data, validity,
  /// tokens, model, a reason for review, the transcription when it carries one) and its work
  /// item's completion with its audit trail and
  /// next work, in one transaction. A result per completion (claim_lost where fenced out; a
  /// permanent error for a value PostgreSQL refuses).
  virtual void complete(std::vector<ingest_completion> completions,
                        callback<std::vector<result<void>>> done)
      = 0;
};

} // namespace ingestd
