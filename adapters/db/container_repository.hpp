// The unpack stage's database port (issue 14): a container's depth, and its unpacking's outcome
// in one transaction: the child documents, their ingestions and queue messages, the parent's
// body text and errors, and the parent's ingestion completed. Claims, failures, give-backs and
// lease renewals of an unpack ingestion are the repository's (repository.hpp): an unpack is an
// ingestion whose stage is `unpack`. Implemented by pg_container_repository.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "messages/ingestion.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

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
  /// A container itself: its ingestion is the unpack stage's, its message on the unpack queue.
  bool container = false;
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

/// Asynchronous like repository: every call returns at once and calls its callback exactly once
/// from a database thread; connection problems are transient; a fenced write whose token no
/// longer matches is an error of class claim_lost.
class container_repository {
public:
  virtual ~container_repository() = default;

  /// How deep in nested containers the document lies (0: submitted by itself); 0 when unknown.
  virtual void depth_of(uuid document_id, callback<int32_t> done) = 0;

  /// In one transaction, fenced by the parent ingestion's claim: inserts each child document
  /// (parent_id, member_name, the parent's depth + 1; skipped when the tenant has its content),
  /// an in-progress ingestion for each new one (the parent ingestion's source, stage `unpack`
  /// for containers), and its queue message (a Postgres queue row, or an outbox row for SQS);
  /// stores body_text and unpack_error on the parent document; completes the parent ingestion
  /// with structured_data (valid when unpack_error is empty). A lost claim rolls everything
  /// back (claim_lost); any failure leaves nothing of it.
  virtual void complete_unpack(lease_ref ref, unpack_completion completion, callback<unpack_counts> done) = 0;

  /// The unpack stage's net (the sweeper's), as repository::rescue_stranded is the ingest
  /// stage's: under a cluster-wide advisory lock of its own, in-progress unpack ingestions that
  /// nobody holds, past due and whose message was not seen for `stale_threshold`, and that no
  /// message of the Postgres queue names; marks them due and seen now and returns their ids for
  /// re-enqueueing on the unpack queue. Empty when another node holds the lock.
  virtual void rescue_stranded(std::chrono::seconds stale_threshold, int limit, callback<std::vector<uuid>> done) = 0;
};

} // namespace ingestd
