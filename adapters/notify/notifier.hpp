// The notification port (seed 003): tells operators that an ingestion ended failed. Opt-in, and
// never part of the ingestion's outcome: a failed notification is reported, never thrown.
#pragma once

#include <cstdint>
#include <string>

#include "messages/result.hpp"

namespace ingestd {

/// What an operator needs to act on a failed ingestion (or a document's failed matching).
struct failure_notice {
  /// Empty for a matching failure.
  std::string ingestion_id;
  std::string document_id;
  std::string tenant_id;
  /// The ingestion's last_error.
  std::string error;
  /// "transient" (attempts exhausted) or "permanent".
  std::string error_class;
  int32_t attempts = 0;
  /// The stage that failed: "ingest" or "match".
  std::string stage = "ingest";
};

class notifier {
public:
  virtual ~notifier() = default;
  /// Asynchronous: returns at once, `done` exactly once (ok, or why the notice was not delivered).
  virtual void notify_failed(failure_notice notice, callback<void> done) = 0;
};

} // namespace ingestd
