// Erasure (`ingestd erase`): a document, with its container children, removed from everywhere it
// lives: its objects in storage (the original, transcriptions, preprocessed scans, the desk's page
// renders), then its rows (ingestions, work items and their queue messages, the audit trail,
// outbox rows and events, matches, reviews) with a receipt that holds no content of it. A
// tenant's erasure does that for each of its documents in bounded batches, then removes the
// tenant's name, credentials and whatever else storage holds under its prefix.
//
// Objects go before rows: when the process dies in between, the rows still name the document and
// the erasure is run again; the other way round would leave objects nothing names.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "adapters/db/pg_erasure_repository.hpp"
#include "adapters/storage/object_store.hpp"

namespace ingestd {

struct erasure_options {
  /// Who asked: stored on the receipt.
  std::string erased_by;
  /// The deadline of each storage call.
  std::chrono::milliseconds storage_timeout{30'000};
  /// A tenant's documents per round.
  int tenant_batch = 100;
};

class eraser {
public:
  eraser(pg_erasure_repository& db, object_store& store, erasure_options opts);

  /// Errors: "erase.not_found" (no such document, or another tenant's when `tenant_id` is given),
  /// "erase.busy" (a node is working on it: cancel it or wait, then erase again), storage and
  /// database errors (nothing was deleted from the database; erase again).
  result<erasure_receipt> erase_document(uuid document_id,
                                         std::optional<uuid> tenant_id = std::nullopt);

  /// Every document of the tenant, then the tenant itself. Stops at the first document that
  /// cannot be erased (what was erased stays erased; erase again to go on).
  result<erasure_receipt> erase_tenant(uuid tenant_id);

private:
  /// Removes every object the plan names or its prefixes hold; answers how many.
  result<int64_t> remove_objects(const erasure_plan& plan);
  result<int64_t> remove_prefix(const std::string& prefix);
  result<erasure_receipt> erase_planned(const erasure_plan& plan, bool write_receipt);

  pg_erasure_repository& db_;
  object_store& store_;
  erasure_options opts_;
};

} // namespace ingestd
