// The intake and status side of the database: documents and ingestions created by intake under a
// per-content lock (with their first work item and its queue message), and the look-ups that the
// HTTP intake, `ingestd status` and the admin endpoint show. Implemented by pg_intake_repository.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "messages/error_codes.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// Intake: a document (deduplicated by tenant and content hash), a new ingestion of it, and the
/// ingestion's work item with its queue message.
struct intake_request {
  /// Proposed ids (UUIDv7); the document id is used only when the document is new.
  uuid document_id;
  uuid ingestion_id;
  uuid tenant_id;
  /// SHA-256 of the content, hex.
  std::string content_hash;
  /// MD5 of the content, hex (the known-file set's other hash); may be empty.
  std::string content_md5;
  /// Storage key for the proposed document id, e.g. "documents/{document_id}.pdf".
  std::string file_path;
  std::string mime_type;
  /// Exactly one of the two is set (the schema's XOR check).
  std::optional<uuid> doc_source_id;
  std::optional<uuid> uploaded_by;
  /// A JSON object, or empty.
  std::string source_metadata;
  /// The stage that processes the ingestion: "ingest" (empty: the same) or "unpack" (a container).
  std::string stage;
  /// 0..100, lower first.
  int32_t priority = 50;
  /// The size class the ingestion starts in ("small", "large").
  std::string size_class = "small";
  /// The queue its message goes to (the stage's, or its size class's).
  std::string queue;
  /// The batch the ingestion belongs to (see batch_info), if any.
  std::optional<uuid> batch_id;
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

/// A tenant's document with a given content, as intake finds it before creating anything.
struct known_document {
  uuid document_id;
  std::string file_path;
  /// Empty when the row has none.
  std::string mime_type;
  /// Its in-progress ingestion, else its latest completed one; nullopt when all failed.
  std::optional<uuid> live_ingestion_id;
  /// "in-progress" | "completed"; empty without a live ingestion.
  std::string live_ingestion_status;
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
  /// Ended without processing (a known file); never for review.
  int64_t skipped = 0;
  /// Skipped ingestions per skip_reason ("known_file").
  std::vector<std::pair<std::string, int64_t>> skipped_by_reason;
  int64_t cancelled = 0;
  /// Age of the oldest in-progress ingestion in seconds (0 when none).
  int64_t oldest_in_progress_seconds = 0;
  /// Failed ingestions per error_class ("transient", "permanent", "" when unknown).
  std::vector<std::pair<std::string, int64_t>> failures_by_error_class;
  int64_t documents_needing_review = 0;
  /// Documents per matching_status ("pending", "in-progress", "succeeded", "failed"; documents
  /// never queued for matching are not counted).
  std::vector<std::pair<std::string, int64_t>> matching_by_status;
  /// Matching in progress for longer than 10 minutes: a crashed matching worker.
  int64_t matching_in_progress_over_10_minutes = 0;
  /// Age of the oldest matching in progress in seconds (0 when none).
  int64_t oldest_matching_in_progress_seconds = 0;
  /// Straight-through processing over the last 30 days: the ingestions completed, those that
  /// went through without a person (the gate passed them; one sampled for a check counts, as it
  /// would have gone through), and of the sampled ones (review.sample_rate), those a person found
  /// right (approved unchanged), wrong (corrected, rejected or reprocessed) or has not checked.
  int64_t completed_30_days = 0;
  int64_t straight_through_30_days = 0;
  int64_t sampled_right = 0;
  int64_t sampled_wrong = 0;
  int64_t sampled_waiting = 0;
};

/// One tenant's open work in one stage, for metrics.
struct tenant_work {
  uuid tenant_id;
  std::string stage;
  /// In progress and not held by a worker (queued, backing off, or its lease ran out).
  int64_t waiting = 0;
  /// Held by a worker under a live lease.
  int64_t in_flight = 0;
};

/// What a cancel request did.
enum class cancel_outcome : uint8_t {
  /// It was queued (nobody held it): now `cancelled`; its message is deleted when it arrives.
  cancelled,
  /// A worker holds it: the request is recorded and the job stops at its next step boundary.
  cancelling,
  /// It was cancelled before.
  already_cancelled,
  /// It is completed or failed: nothing to cancel (`status` says which); a container's
  /// children may have been (cancel_result's counts).
  finished,
  /// No such ingestion (or another tenant's).
  not_found,
};

struct cancel_result {
  cancel_outcome outcome = cancel_outcome::not_found;
  /// The ingestion's status before the request.
  std::string status;
  /// A container's cascade: the ingestions of its descendants (children, nested containers'
  /// children) not yet finished, cancelled at once (queued) or asked to stop (running).
  int64_t children_cancelled = 0;
  int64_t children_cancelling = 0;
  int64_t children() const { return children_cancelled + children_cancelling; }
};

/// Which failed work to run again (`ingestd retry`).
struct retry_request {
  /// Ingestion or document ids: an ingestion's failed stage (the ingestion itself, or its
  /// document's matching), every failed stage of a document. Empty: every failed item.
  std::vector<uuid> ids;
  /// Only this stage ("ingest", "unpack", "match"); empty: any.
  std::string stage;
  /// Only items that failed at or after this time (ISO 8601, as PostgreSQL reads a
  /// timestamptz); empty: any time.
  std::string since;
  /// The queue of each stage label ("ingest", "ingest.large", "unpack", "match"): a failed item
  /// of a label without a queue (its stage is not enabled) is left failed and reported.
  std::vector<std::pair<std::string, std::string>> queues;
  /// The messages as outbox rows the relay sends (SQS), else rows of the Postgres queue.
  bool via_outbox = false;
  /// Who asked, for the audit trail and the event.
  std::string who;
  /// Only this tenant's items (the HTTP intake's caller); none: any tenant (an operator's tool).
  std::optional<uuid> tenant;
  int limit = 1000;
  /// A redrive (`ingestd queues redrive`): the ids are those of a dead-letter queue's messages,
  /// and an item still in progress (its message died while a sweep had not yet sent another)
  /// gets a new message too, its attempts and claim left as they are. The audit step and the
  /// event's "via" say "redrive" instead of "retry".
  bool redrive = false;
};

/// One failed item a retry found.
struct retried_item {
  /// The work item: an ingestion's id (ingest, unpack) or a document's (match).
  uuid id;
  std::string stage;
  uuid document_id;
  /// Whether it was sent again (false: its stage has no queue here).
  bool sent = false;
  std::string last_error;
  /// Its status when found: "failed", or for a redrive also "in-progress" (sent) or a final
  /// one (completed, skipped, cancelled: nothing to do, not sent).
  std::string status;
};

/// A named set of a tenant's submissions and the states of its ingestions, container children
/// included. Open while documents are added, sealed when its submitter is done, finished once
/// sealed with nothing in progress (decided in the transaction of that last change, which emits
/// BATCH_FINISHED).
struct batch_info {
  uuid id;
  uuid tenant_id;
  std::string name;
  /// "open" | "sealed" | "finished".
  std::string state;
  /// ISO 8601 UTC; empty when not (yet) so.
  std::string created_at;
  std::string finished_at;
  int64_t documents = 0;
  int64_t in_progress = 0;
  int64_t completed = 0;
  int64_t for_review = 0;
  int64_t failed = 0;
  int64_t skipped = 0;
  int64_t cancelled = 0;
  /// Files submitted to it whose content the tenant already had (no new ingestion).
  int64_t duplicates = 0;
  /// All of the above as a JSON object (the BATCH_FINISHED payload's shape).
  std::string json;
};

/// Blocking, for request threads and command-line tools (never inside an actor); thread-safe.
/// Every call has a deadline: a statement still running when it passes is cancelled and the
/// call fails with the transient error `timeout_code`. Connection problems are transient errors
/// ("pg.connection", "pg.<SQLSTATE>").
class intake_repository {
public:
  using timeout = std::chrono::milliseconds;
  /// The code of a call that passed its deadline.
  static constexpr std::string_view timeout_code = errc::db_timeout;

  /// Held while one (tenant, content) is taken in, so that concurrent intakes of the same
  /// content (in any process) see each other's rows. Destroying it releases the lock.
  class content_lock {
  public:
    virtual ~content_lock() = default;
    /// The tenant's document with this content, including what an earlier holder committed.
    virtual result<std::optional<known_document>> find_document(timeout t) = 0;
  };

  virtual ~intake_repository() = default;

  /// Waits until no one else holds the lock of (tenant_id, content_hash), then holds it.
  virtual result<std::unique_ptr<content_lock>>
  lock_content(uuid tenant_id, const std::string& content_hash, timeout t) = 0;

  /// The tenant's document that a channel delivered under `source_key` (a message's Message-ID,
  /// an object's key: intake_item::source_key), from the latest ingestion that carries the key;
  /// nullopt when none does.
  virtual result<std::optional<known_document>>
  find_by_source_key(uuid tenant_id, const std::string& source_key, timeout t) = 0;

  /// Creates the document (or finds it by tenant_id and content_hash), a new in-progress
  /// ingestion of it, its work item and its queue message, in one statement; retrying with the
  /// same ingestion id creates nothing new.
  virtual result<intake_result> create_ingestion(const intake_request& request, timeout t) = 0;

  /// The tenant's document as JSON (state, structured data, ingestions, matching_status,
  /// cluster_id and its match edges as "matches"; parent_id, member_name, body_text,
  /// unpack_error and the "children" it was unpacked into); nullopt when unknown
  /// or another tenant's (so that a caller cannot tell the two apart).
  virtual result<std::optional<std::string>> document_json(uuid tenant_id, uuid document_id,
                                                           timeout t)
      = 0;

  /// An ingestion of the tenant's documents as JSON (status, attempts, errors, audit events);
  /// nullopt when unknown or another tenant's.
  virtual result<std::optional<std::string>> ingestion_json(uuid tenant_id, uuid ingestion_id,
                                                            timeout t)
      = 0;

  /// Documents flagged for human review (id, tenant, file name), newest last, as a JSON array.
  virtual result<std::string> review_json(int limit, timeout t) = 0;

  /// One row per document (newest last): file name, state, key extracted fields,
  /// matching_status, cluster_id, parent_id and member_name, as JSON array.
  virtual result<std::string> documents_json(int limit, timeout t) = 0;

  /// One ingestion with its document's review flag; nullopt when unknown.
  virtual result<std::optional<ingestion_status>> find_ingestion(uuid ingestion_id, timeout t) = 0;

  /// Counts by status, the oldest in-progress ingestion, failures by class, review backlog,
  /// matching by status and matching in progress for too long.
  virtual result<status_summary> summarize(timeout t) = 0;

  /// Cancels an ingestion (of `tenant_id`'s documents when given) in one statement with its
  /// audit event (step "cancel"): see cancel_outcome. A container's cancel cascades to the
  /// unfinished ingestions of its descendants, each with its audit event (its counts in the
  /// result), whatever the container's own status. `who` is recorded as the events' worker.
  virtual result<cancel_result> cancel_ingestion(uuid ingestion_id, std::optional<uuid> tenant_id,
                                                 const std::string& who, timeout t)
      = 0;

  /// Runs failed work items again, each from the start of its own stage (what earlier stages
  /// produced is kept): in one transaction, each item is reopened (in progress, no attempts) with
  /// a new queue message, an audit row (step "retry", or "redrive") and a RETRY_REQUESTED event.
  /// Answers the items found, oldest failure first.
  virtual result<std::vector<retried_item>> retry_failed(const retry_request& request, timeout t)
      = 0;

  /// The tenant's batch called `name`, created (BATCH_STARTED) or found; a sealed one is open
  /// again (to take more documents) until sealed again.
  virtual result<batch_info> open_batch(uuid tenant_id, const std::string& name, timeout t) = 0;

  /// Seals a batch (of `tenant_id` when given): no more documents are coming. Finishes it when
  /// nothing of it is in progress. nullopt when unknown or another tenant's.
  virtual result<std::optional<batch_info>> seal_batch(uuid batch_id, std::optional<uuid> tenant_id,
                                                       timeout t)
      = 0;

  /// Counts a file submitted to a batch as a duplicate, unless its live ingestion is already a
  /// member (a batch submitted again).
  virtual result<void> note_duplicate(uuid batch_id, uuid live_ingestion_id, timeout t) = 0;

  /// A batch (of `tenant_id` when given); nullopt when unknown or another tenant's.
  virtual result<std::optional<batch_info>> find_batch(uuid batch_id, std::optional<uuid> tenant_id,
                                                       timeout t)
      = 0;

  /// The newest batches first (of `tenant_id` when given), at most `limit`.
  virtual result<std::vector<batch_info>> list_batches(std::optional<uuid> tenant_id, int limit,
                                                       timeout t)
      = 0;

  /// The batch's ingestions still in progress, oldest first (what cancelling it cancels).
  virtual result<std::vector<uuid>> batch_in_progress(uuid batch_id, timeout t) = 0;

  /// A cheap round trip to the database.
  virtual result<void> ping(timeout t) = 0;
};

} // namespace ingestd
