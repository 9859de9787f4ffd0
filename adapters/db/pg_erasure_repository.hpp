// Erasure in the database (`ingestd erase`): what a document leaves behind (its container
// children, its rows, the keys of its objects), the deletion of its rows with the receipt in one
// transaction, and the receipts. Blocking, on one connection, for the command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/db/pg_connection.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// One document and everything derived from it, as found before erasing it.
struct erasure_plan {
  uuid tenant_id;
  /// The document, then its container children (attachments, archive members), at any depth.
  std::vector<uuid> documents;
  /// The ingestions of these documents (their objects live under the ingestion's id).
  std::vector<uuid> ingestions;
  /// Every object key the rows name: originals, transcriptions, preprocessed scans.
  std::vector<std::string> object_keys;
  /// Work items of these documents that a node holds right now (a live claim).
  int64_t running = 0;
};

/// What an erasure removed; holds no content of what it removed.
struct erasure_receipt {
  uuid id;
  /// "document" or "tenant".
  std::string scope;
  uuid subject_id;
  uuid tenant_id;
  std::string erased_by;
  std::string erased_at;
  int64_t documents = 0;
  /// (table, rows deleted), in a fixed order.
  std::vector<std::pair<std::string, int64_t>> rows;
  int64_t objects = 0;
};

class pg_erasure_repository {
public:
  explicit pg_erasure_repository(std::string database_url);

  /// The document (of `tenant_id` when given) with its children; nullopt when there is none.
  result<std::optional<erasure_plan>> plan_document(uuid document_id,
                                                    std::optional<uuid> tenant_id = std::nullopt);

  /// Up to `limit` of the tenant's documents that are no container's child (erasing each takes
  /// its children along).
  result<std::vector<uuid>> tenant_documents(uuid tenant_id, int limit);

  /// Deletes the plan's rows (work items and their queue messages and audit rows, ingestions,
  /// matches, reviews, outbox rows and events, the documents), emits DOCUMENT_ERASED and, when
  /// `receipt_scope` is "document", writes the receipt, all in one transaction. Fails without
  /// deleting anything when a work item was claimed meanwhile ("erase.busy"). `objects` is how
  /// many objects the caller removed from storage. A tenant's erasure passes false and writes one
  /// receipt at the end (finish_tenant).
  result<erasure_receipt> erase_rows(const erasure_plan& plan, const std::string& erased_by,
                                     int64_t objects, bool write_receipt);

  /// The end of a tenant's erasure: its name and credentials, the events that name it, and the
  /// receipt with the totals of its documents.
  result<erasure_receipt> finish_tenant(uuid tenant_id, const std::string& erased_by,
                                        const erasure_receipt& totals);

  /// Receipts, newest first (of one tenant when given).
  result<std::vector<erasure_receipt>> receipts(std::optional<uuid> tenant_id, int limit);

private:
  pg::connection conn_;
};

} // namespace ingestd
