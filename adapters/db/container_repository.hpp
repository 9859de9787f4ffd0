// The unpack stage's database port: what its job reads of a container's ingestion, and its
// unpacking's outcome in one transaction: the child documents, their ingestions, work items and
// queue messages, the parent's body text and errors, and the parent's work item completed. The
// claim, failures and give-backs are the work item's (work_repository.hpp). Implemented by
// pg_container_repository.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "messages/result.hpp"
#include "messages/uuid.hpp"
#include "messages/work.hpp"

namespace ingestd {

/// One member or attachment to become a child document.
struct unpack_child {
  /// Proposed ids; the document id is used only when the tenant has no document with this content.
  uuid document_id;
  uuid ingestion_id;
  /// SHA-256 of the content, hex.
  std::string content_hash;
  /// Where the bytes are stored (written before the completion).
  std::string file_path;
  std::string mime_type;
  /// Its path in the archive, or the attachment's file name.
  std::string member_name;
  /// The stage of its ingestion ("ingest" for a document, "unpack" for a container) and the
  /// queue its message goes to.
  std::string stage = "ingest";
  std::string queue;
};

/// A container's ingestion joined with its document, as the unpack job needs it.
struct container_details {
  std::string file_path;
  std::string mime_type;
  /// How deep in nested containers the document lies (0: submitted by itself).
  int32_t depth = 0;
};

/// What the unpacking of one container produced.
struct unpack_completion {
  std::vector<unpack_child> children;
  /// An e-mail's body as text (empty for archives).
  std::string body_text;
  /// The parent's structured data: a JSON object describing the container.
  std::string structured_data;
  /// What could not be read while the rest was kept (empty when nothing): recorded on the
  /// parent, which then goes to review.
  std::string unpack_error;
};

/// What the completion created.
struct unpack_counts {
  /// Child documents created, each with an ingestion and a queue message.
  int created = 0;
  /// Members whose content the tenant already had as a document: nothing new was created.
  int known = 0;
};

/// Asynchronous: every call returns at once and calls its callback exactly once from a database
/// thread; connection problems are transient; a fenced write whose claim no longer holds is an
/// error of class claim_lost.
class container_repository {
public:
  virtual ~container_repository() = default;

  /// The container's ingestion `id` and its document; a permanent error when it does not exist.
  virtual void load(uuid ingestion_id, callback<container_details> done) = 0;

  /// In one transaction, fenced by the parent's claim: inserts each child document (parent_id,
  /// member_name, the parent's depth + 1; skipped when the tenant has its content), an
  /// ingestion for each new one (the parent ingestion's source) with its work item and queue
  /// message, stores body_text and unpack_error on the parent document, keeps structured_data
  /// on the parent's ingestion (valid when unpack_error is empty) and completes its work item
  /// (`outcome`). A lost claim rolls everything back (claim_lost); any failure leaves nothing
  /// of it.
  virtual void complete_unpack(work_outcome outcome, unpack_completion completion,
                               callback<unpack_counts> done)
      = 0;
};

} // namespace ingestd
