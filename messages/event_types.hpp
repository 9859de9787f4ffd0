// The types of the status event stream (the outbox's events: the migrations' triggers,
// `ingestd retry` and `ingestd erase` write them, the budgets BUDGET_EXCEEDED; the node writes
// WORKER_STARTED and WORKER_FINISHED). A sink may take a subset (outbox.events_webhook_types,
// outbox.events_sqs_types; the failure notifier takes the failures).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace ingestd {

inline const std::vector<std::string>& event_types() {
  static const std::vector<std::string> types{
      "DOCUMENT_ADDED",      "INGESTION_QUEUED",   "INGESTION_STARTED",
      "INGESTION_COMPLETED", "INGESTION_FAILED",   "INGESTION_SKIPPED",
      "INGESTION_CANCELLED", "DOCUMENT_PROCESSED", "MATCHING_COMPLETED",
      "MATCHING_FAILED",     "REVIEW_COMPLETED",   "DOCUMENT_ERASED",
      "RETRY_REQUESTED",     "BUDGET_EXCEEDED",    "WARNING",
      "WORKER_STARTED",      "WORKER_FINISHED"};
  return types;
}

inline bool known_event_type(std::string_view type) {
  const auto& all = event_types();
  return std::find(all.begin(), all.end(), type) != all.end();
}

} // namespace ingestd
