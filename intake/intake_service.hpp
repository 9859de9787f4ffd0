// The intake service, shared by `ingestd submit` and the HTTP intake server: hash the file, find
// or create its document, store it once, and create an ingestion with its work item and queue
// message in one transaction. Business logic over ports only (intake_repository, object_store):
// no SQL here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/db/intake_repository.hpp"
#include "messages/file_type.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

class intake_repository;
class object_store;

/// Who sent the document: exactly one of the two ids (the schema's XOR).
struct intake_source {
  std::optional<uuid> uploaded_by;
  std::optional<uuid> doc_source_id;
};

struct intake_item {
  uuid tenant_id;
  intake_source source;
  std::string bytes;
  /// The original file name, kept in the ingestion's source_metadata (may be empty).
  std::string name;
  /// Where it came from ("cli", "http"), kept in source_metadata.
  std::string channel;
  /// 0..100, lower first: stored on the work item and carried by its message.
  int32_t priority = 50;
  /// The submitter's own fields (a load file's columns), kept in source_metadata.metadata.
  std::vector<std::pair<std::string, std::string>> metadata = {};
  /// The batch it is submitted in (open_batch), if any.
  std::optional<uuid> batch_id = {};
  /// The channel's own name for it (a mailbox message's Message-ID, a bucket object's key), kept
  /// in source_metadata: a key the tenant's ingestions already carry makes it a duplicate of
  /// theirs, even when the bytes differ. Empty: none.
  std::string source_key = {};
};

/// What intake did with one file.
enum class intake_status {
  /// A new document: stored, ingestion created and enqueued.
  created,
  /// A known document whose earlier ingestions all failed: a new ingestion was created.
  reprocessing,
  /// A known document (by its content, or by its source key) that is ready or being processed:
  /// nothing new was created; the ids are the existing document and its live (in-progress, else
  /// latest completed) ingestion.
  duplicate,
};

std::string_view to_string(intake_status s);

/// A priority as the command line and the HTTP intake take it: a whole number 0..100 (lower
/// first); nullopt otherwise.
std::optional<int32_t> parse_priority(std::string_view text);

struct intake_outcome {
  intake_status status = intake_status::created;
  uuid document_id;
  uuid ingestion_id;
  /// The ingestion's status for duplicates ("in-progress" | "completed"); "in-progress" else.
  std::string ingestion_status = "in-progress";
  std::string file_path;
  std::string mime_type;
  /// The queue message is written in the transaction that creates the ingestion: true once it
  /// is created (and for a duplicate, whose message exists).
  bool enqueued = true;
};

struct intake_options {
  /// Larger files are refused ("intake.too_large").
  size_t max_bytes = 20u << 20;
  /// Deadline for each port call (storage, database, queue).
  std::chrono::seconds call_timeout{60};
  /// The ingest stage's queue (its small class's with size classes): where a document's
  /// message goes.
  std::string ingest_queue = "ingestd-ingest";
  /// The unpack stage's queue: containers (ZIP, TAR, .tar.gz, e-mail, mbox) are accepted and
  /// their messages go there. Empty: containers are refused ("intake.containers_disabled").
  std::string unpack_queue;
  /// Size classes: a document of at least large_min_bytes bytes or large_min_pages pages (as
  /// count_pages tells; 0 when it cannot) starts in the large class and its message goes to
  /// large_queue. Empty large_queue: every document is small.
  std::string large_queue;
  size_t large_min_bytes = 5u << 20;
  int large_min_pages = 10;
  std::function<int(std::string_view bytes, std::string_view mime)> count_pages;
  /// The queue of each stage label ("ingest", "ingest.large", "unpack", "match"), where a retried
  /// item's message goes (retry); a stage without one here leaves its items failed.
  std::vector<std::pair<std::string, std::string>> stage_queues;
  /// Messages go through the outbox (SQS) rather than as rows of the Postgres queue.
  bool via_outbox = false;
};

/// A batch name intake takes: 1..200 bytes, no control characters.
bool valid_batch_name(std::string_view name);

/// The size class a document of `bytes` with MIME type `mime` starts in under `opts`.
std::string size_class_of(const intake_options& opts, std::string_view bytes,
                          std::string_view mime);

/// Errors (all permanent unless a port reports a transient one): "intake.empty",
/// "intake.containers_disabled" (a container while the unpack stage is off),
/// "intake.too_large", "intake.unsupported_type", "intake.invalid_source",
/// "intake.invalid_priority", "intake.timeout" (transient). Thread-safe: call submit() from several
/// threads at once.
class intake_service {
public:
  /// `db` also serialises the intake of one (tenant, content) across processes.
  intake_service(std::shared_ptr<intake_repository> db, std::shared_ptr<object_store> storage,
                 intake_options opts = {});
  ~intake_service();
  intake_service(const intake_service&) = delete;
  intake_service& operator=(const intake_service&) = delete;

  /// Blocking: validates, deduplicates, stores, creates (see intake_status).
  /// Idempotent: the same bytes again for the same tenant are a duplicate with the same ids.
  result<intake_outcome> submit(const intake_item& item);

  /// The tenant's document as JSON (state, structured data, ingestions); nullopt when unknown
  /// or another tenant's.
  result<std::optional<std::string>> document_json(uuid tenant_id, uuid document_id);

  /// An ingestion of the tenant's as JSON (status, attempts, errors, audit events); nullopt when
  /// unknown or another tenant's.
  result<std::optional<std::string>> ingestion_json(uuid tenant_id, uuid ingestion_id);

  /// Cancels an ingestion of the tenant's documents, or of any tenant's when nullopt
  /// (the operator's `ingestd cancel`); `who` goes in the audit event. See cancel_outcome.
  result<cancel_result> cancel(std::optional<uuid> tenant_id, uuid ingestion_id,
                               const std::string& who);

  /// Runs the tenant's failed ingestion (or its document's failed matching) again from the start
  /// of its stage (the HTTP intake's retry); `who` goes in the audit event. The items found: none
  /// when the id is unknown, another tenant's, or has nothing failed.
  result<std::vector<retried_item>> retry(uuid tenant_id, uuid ingestion_id,
                                          const std::string& who);

  /// The tenant's batch called `name` (1..200 characters of printable text), created or found
  /// and open to more documents until sealed ("intake.invalid_batch" for a bad name).
  result<batch_info> open_batch(uuid tenant_id, const std::string& name);

  /// Seals a batch of the tenant's (any tenant's when nullopt): it finishes once nothing of it
  /// is in progress. nullopt when unknown or another tenant's.
  result<std::optional<batch_info>> seal_batch(std::optional<uuid> tenant_id, uuid batch_id);

  /// A batch of the tenant's (any tenant's when nullopt); nullopt when unknown or another's.
  result<std::optional<batch_info>> batch(std::optional<uuid> tenant_id, uuid batch_id);

  /// Waits until no other holder (in any process) has the tenant's `key`, then holds it until
  /// the lock is destroyed: the readers of one mailbox take turns. Within the call deadline.
  result<std::unique_ptr<intake_repository::content_lock>> take_turn(uuid tenant_id,
                                                                     const std::string& key);

  const intake_options& options() const { return opts_; }

private:
  std::shared_ptr<intake_repository> db_;
  std::shared_ptr<object_store> storage_;
  intake_options opts_;
};

} // namespace ingestd
