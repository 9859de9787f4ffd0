// The database port: every read and write the pipeline makes on PostgreSQL, in the shape of
// seed 000's statements made fenced (DESIGN §5). Implemented by pg_repository over a small pool
// of libpq connections on their own threads.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "messages/ingestion.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

struct claim_request {
  uuid ingestion_id;
  /// A fresh token the claimer generated; the claim stores it.
  uuid claim_token;
};

struct completion {
  lease_ref ref;
  completion_record record;
};

/// Intake: a document (deduplicated by tenant and content hash) and a new ingestion of it.
struct intake_request {
  /// Proposed ids (UUIDv7); the document id is used only when the document is new.
  uuid document_id;
  uuid ingestion_id;
  uuid tenant_id;
  /// SHA-256 of the content, hex.
  std::string content_hash;
  /// Storage key for the proposed document id, e.g. "documents/{document_id}.pdf".
  std::string file_path;
  std::string mime_type;
  /// Exactly one of the two is set (the schema's XOR check).
  std::optional<uuid> doc_source_id;
  std::optional<uuid> uploaded_by;
  /// A JSON object, or empty.
  std::string source_metadata;
};

/// What intake created or found.
struct intake_result {
  uuid document_id;
  uuid ingestion_id;
  /// The document's storage key (the existing one when the document was already known).
  std::string file_path;
  /// true when this call inserted the document (the caller stores the file).
  bool document_created = false;
  /// false when an ingestion with this id already existed (a retried intake).
  bool ingestion_created = false;
};

/// One ingestion as `ingestd status ID` and tests see it.
struct ingestion_status {
  uuid ingestion_id;
  uuid document_id;
  std::string status;
  int32_t attempt_count = 0;
  std::string last_error;
  std::string error_class;
  std::string claimed_by;
  bool claimed = false;
  /// The document's flag and structured data (JSON text, empty when NULL).
  bool needs_human_review = false;
  std::string document_structured_data;
};

/// Figures for `ingestd status` and metrics.
struct status_summary {
  int64_t in_progress = 0;
  int64_t completed = 0;
  int64_t failed = 0;
  /// Age of the oldest in-progress ingestion in seconds (0 when none).
  int64_t oldest_in_progress_seconds = 0;
  /// Failed ingestions per error_class ("transient", "permanent", "" when unknown).
  std::vector<std::pair<std::string, int64_t>> failures_by_error_class;
  int64_t documents_needing_review = 0;
};

/// Asynchronous: every call returns at once and calls its callback exactly once, from a
/// database thread. Connection problems are transient errors (code "pg.<SQLSTATE>" or
/// "pg.connection"); a fenced write that matches no row is an error of class claim_lost.
class repository {
public:
  virtual ~repository() = default;

  /// Claims ingestions in one statement: each succeeds when the ingestion is `in-progress` and
  /// unclaimed or its lease has expired. A success sets claim_token, claimed_by, started_at,
  /// lease_expires_at = now() + lease, and returns the ingestion joined with its document;
  /// nullopt means not claimable (claimed by a live worker, finished, or unknown id).
  virtual void claim(std::vector<claim_request> requests, std::string worker_id,
                     std::chrono::seconds lease,
                     callback<std::vector<std::optional<claimed_ingestion>>> done) = 0;

  /// The current state of each ingestion (same order as `ids`). The job asks when its claim did
  /// not succeed, to tell a duplicate of a finished ingestion (delete the message) from one that
  /// another worker is processing right now (leave the message alone).
  virtual void states(std::vector<uuid> ids, callback<std::vector<ingestion_state>> done) = 0;

  /// Seed 000 step 7: transcription_file_path, preprocessed_file_path, quality score.
  virtual void record_transcription(lease_ref ref, transcription_record record,
                                    callback<void> done) = 0;

  /// Seed 000 step 10, for several ingestions in one round trip: status completed,
  /// completed_at, claim cleared. One result per completion (claim_lost where fenced out).
  virtual void complete(std::vector<completion> completions,
                        callback<std::vector<result<void>>> done) = 0;

  /// Seed 000's failure update: attempt_count + 1; `failed` at max attempts or at once for a
  /// permanent error; last_error and error_class recorded; the claim is cleared so the next
  /// delivery can claim at once; due_at = now() + retry_delay while it stays in progress.
  virtual void record_failure(lease_ref ref, failure_record record,
                              std::chrono::seconds retry_delay,
                              callback<failure_outcome> done) = 0;

  /// Extends leases in one statement; answers the refs whose claim was lost.
  virtual void renew_leases(std::vector<lease_ref> refs, std::chrono::seconds lease,
                            callback<std::vector<lease_ref>> done) = 0;

  /// Gives a claim up without recording an attempt (shutdown): another worker may claim at once.
  virtual void release(lease_ref ref, callback<void> done) = 0;

  /// Appends audit events in one statement.
  virtual void append_events(std::vector<audit_event> events, callback<void> done) = 0;

  /// The sweeper's net: under a cluster-wide advisory lock, finds `in-progress` ingestions that
  /// nobody holds (no live lease) and that were due more than `stale_threshold` ago, marks them
  /// due now and returns their ids for re-enqueueing. Empty when another node holds the lock.
  virtual void rescue_stranded(std::chrono::seconds stale_threshold, int limit,
                               callback<std::vector<uuid>> done) = 0;

  // Intake and status look-ups. Not pure so that fakes that do not need them still compile;
  // the defaults answer a permanent "repository.unsupported" error.

  /// Creates the document (or finds it by tenant_id and content_hash) and a new in-progress
  /// ingestion of it, in one statement; retrying with the same ingestion id creates nothing new.
  virtual void create_ingestion(intake_request /*request*/, callback<intake_result> done) {
    done(error::make_permanent("repository.unsupported", "create_ingestion"));
  }

  /// One ingestion with its document's review flag; nullopt when unknown.
  virtual void find_ingestion(uuid /*ingestion_id*/,
                              callback<std::optional<ingestion_status>> done) {
    done(error::make_permanent("repository.unsupported", "find_ingestion"));
  }

  /// Counts by status, the oldest in-progress ingestion, failures by class, review backlog.
  virtual void summarize(callback<status_summary> done) {
    done(error::make_permanent("repository.unsupported", "summarize"));
  }
};

} // namespace ingestd
