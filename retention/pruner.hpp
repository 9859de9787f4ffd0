// Retention (retention.*): the pruner's pass, oldest first and one batch of each kind at most:
// - originals of documents that last arrived (their newest ingestion) longer ago than their
//   days, on which no work is in progress: the object leaves storage, then
//   document.original_pruned_at says so (a document submitted again is stored again and
//   unmarked);
// - derived objects of finished ingestions older than theirs (the transcription, the
//   preprocessed scan, the desk's page renders of the document), then
//   ingestion.derived_pruned_at;
// - the audit trail of finished ingestions older than theirs, with the marks, in one statement;
// - delivered rows of the status event stream older than their tenant's days.
// Objects go before their marks: a pass cut short leaves rows that are due again, never an
// object nothing names. The extracted data, the document's row, its matches and reviews stay.
// Passes run one at a time on the pruner's own thread (the node's pruning actor asks for them).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "actors/pruning.hpp"
#include "adapters/db/pg_retention_repository.hpp"
#include "adapters/storage/object_store.hpp"
#include "config/config.hpp"

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

class pruner final : public retention_pass {
public:
  pruner(std::unique_ptr<pg_retention_repository> db, std::shared_ptr<object_store> store,
         retention_policy policy, int batch_size,
         std::chrono::milliseconds storage_timeout = std::chrono::seconds{30});
  /// Finishes the pass that runs, then stops its thread.
  ~pruner() override;
  pruner(const pruner&) = delete;
  pruner& operator=(const pruner&) = delete;

  void run(callback<prune_report> done) override;
  /// One pass, on the caller's thread.
  result<prune_report> pass();

private:
  result<int64_t> prune_originals(bool& full);
  result<int64_t> prune_derived(bool& full);
  void loop();

  std::unique_ptr<pg_retention_repository> db_;
  std::shared_ptr<object_store> store_;
  retention_policy policy_;
  int batch_;
  std::chrono::milliseconds timeout_;
  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<callback<prune_report>> asked_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace ingestd
