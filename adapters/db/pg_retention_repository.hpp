// Retention in the database (retention.*, migration 022): what is past its age, oldest first and
// in bounded batches, and the marks that say it was pruned. Blocking, on one connection, for the
// periodic actor's thread that runs the pruner's passes (retention/pruner.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "adapters/db/pg_connection.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// The days a kind of thing is kept (0: for ever), with tenants' own.
struct retention_days {
  int days = 0;
  /// (tenant, days) pairs that replace `days` for a tenant.
  std::vector<std::pair<uuid, int>> tenants;
  /// Whether anything of this kind is ever pruned.
  bool any() const;
};

/// A document whose original is past its age (no work on it in progress).
struct due_original {
  uuid document_id;
  uuid tenant_id;
  std::string file_path;
};

/// A finished ingestion whose derived objects are past their age.
struct due_derived {
  uuid ingestion_id;
  uuid document_id;
  uuid tenant_id;
  /// Empty when the ingestion has none.
  std::string transcription_file_path;
  std::string preprocessed_file_path;
};

class pg_retention_repository {
public:
  pg_retention_repository(std::string database_url, pg::session_options session = {});

  result<std::vector<due_original>> due_originals(const retention_days& r, int limit);
  result<void> originals_pruned(const std::vector<uuid>& documents);
  result<std::vector<due_derived>> due_derived_objects(const retention_days& r, int limit);
  result<void> derived_pruned(const std::vector<uuid>& ingestions);
  /// Deletes the audit trail of up to `limit` finished ingestions past their age (with their
  /// document's matching rows of that age) and marks them; answers the rows deleted and how many
  /// ingestions were marked.
  result<std::pair<int64_t, int64_t>> prune_audit(const retention_days& r, int limit);
  /// Deletes up to `limit` delivered rows of the status event stream (the stream's own and the
  /// sinks' copies) older than their tenant's days; answers how many.
  result<int64_t> prune_events(const retention_days& r, int limit);

private:
  pg::connection conn_;
};

} // namespace ingestd
