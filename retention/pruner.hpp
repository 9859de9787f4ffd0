// Retention (retention.*): the pruner's pass, oldest first and one batch of each kind at most:
// - originals of documents that last arrived (their newest ingestion) longer ago than their
//   days, on which no work is in progress: the object leaves storage, then
//   document.original_pruned_at says so (a document submitted again is stored again and
//   unmarked);
// - derived objects of finished ingestions older than theirs (the transcription, the
//   preprocessed scan, whatever else storage holds under the ingestion's prefix, the desk's page
//   renders of the document), then ingestion.derived_pruned_at;
// - the audit trail of finished ingestions older than theirs, with the marks, in one statement;
// - delivered rows of the status event stream older than their tenant's days.
// Objects go before their marks: a pass cut short leaves rows that are due again, never an
// object nothing names. The extracted data, the document's row, its matches and reviews stay.
// The node's periodic actor runs the passes, one at a time on its own thread; each logs and counts
// what it removed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "adapters/db/pg_retention_repository.hpp"
#include "adapters/storage/object_store.hpp"
#include "config/config.hpp"
#include "messages/result.hpp"

namespace ingestd {

/// The days of each kind, from the configuration (retention.*).
struct retention_policy {
  retention_days originals;
  retention_days derived;
  retention_days audit;
  retention_days events;

  static result<retention_policy> from(const config::retention_section& r);
  bool any() const { return originals.any() || derived.any() || audit.any() || events.any(); }
};

/// What one pass removed.
struct prune_report {
  int64_t originals = 0;
  /// Derived objects (transcriptions, preprocessed scans, page renders).
  int64_t derived = 0;
  int64_t audit_rows = 0;
  /// Rows of the status event stream (the stream's and the sinks' delivered copies).
  int64_t events = 0;
  /// A batch was full: more is due.
  bool more = false;
};

class worker_metrics;

class pruner {
public:
  /// `metrics` (may be null) counts what the passes removed.
  pruner(std::unique_ptr<pg_retention_repository> db, std::shared_ptr<object_store> store,
         retention_policy policy, int batch_size, std::shared_ptr<worker_metrics> metrics = nullptr,
         std::chrono::milliseconds storage_timeout = std::chrono::seconds{30});

  pruner(const pruner&) = delete;
  pruner& operator=(const pruner&) = delete;

  /// One pass, logged and counted: true when a batch was full (the periodic actor's task).
  result<bool> pass();

private:
  result<prune_report> prune();
  result<int64_t> prune_originals(bool& full);
  result<int64_t> prune_derived(bool& full);

  std::unique_ptr<pg_retention_repository> db_;
  std::shared_ptr<object_store> store_;
  retention_policy policy_;
  int batch_;
  std::shared_ptr<worker_metrics> metrics_;
  std::chrono::milliseconds timeout_;
};

} // namespace ingestd
