// The review desk's side of the database: the queue of documents needing a person,
// one document with everything a reviewer needs, and the reviewer's decisions (approve, reject,
// reprocess) saved under optimistic concurrency. Implemented by pg_review_repository.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/db/learning_repository.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// Why a document waits for a person: the quality "gate" refused its latest ingestion's
/// extraction (extraction.gate_failed), that ingestion "failed" otherwise (an unreadable file,
/// a provider error, attempts exhausted), or the gate passed it and review.sample_rate chose it
/// for a "sample" check, or review.auto_approve held it back ("calibration": reviewers corrected
/// one of its fields too often at the extractor's confidence).
inline constexpr std::string_view review_reasons[] = {"gate", "failed", "sample", "calibration"};

struct review_queue_filter {
  /// The tenants the caller may see (at least one).
  std::vector<uuid> tenants;
  /// "gate", "failed" or empty for both.
  std::string reason;
  int limit = 200;
};

struct review_queue_item {
  uuid document_id;
  uuid tenant_id;
  std::string file_name;
  /// "gate" | "failed".
  std::string reason;
  /// The latest ingestion's last_error (the gate's reason or the error).
  std::string detail;
  /// From the structured data; empty when absent.
  std::string supplier;
  std::string total;
  std::string currency;
  int64_t age_seconds = 0;
  int64_t version = 0;
};

struct review_queue {
  /// Oldest first.
  std::vector<review_queue_item> items;
  /// Documents needing review in the filter's tenants, by reason (whatever the reason filter).
  std::vector<std::pair<std::string, int64_t>> counts;
  /// Documents needing review that are being processed again (not actionable, not listed).
  int64_t processing = 0;
};

/// One document as the desk shows it.
struct review_document {
  uuid id;
  uuid tenant_id;
  std::string file_path;
  std::string mime_type;
  std::string file_name;
  int64_t version = 0;
  bool needs_human_review = false;
  /// Empty, "approved", "rejected" or "reprocessing".
  std::string review_status;
  std::string reviewed_by;
  /// The document's structured_data (JSON text, empty when NULL).
  std::string structured_data;
  /// The latest ingestion's own extraction (the machine's; JSON text, empty when NULL).
  std::string machine_data;
  std::optional<uuid> latest_ingestion_id;
  std::string latest_status;
  std::string last_error;
  std::string transcription_file_path;
  std::string preprocessed_file_path;
  /// An ingestion of it is in progress: it cannot be reviewed now.
  bool processing = false;
  /// JSON arrays: every ingestion's audit events (oldest first), match edges, the other members
  /// of its cluster, and earlier reviews.
  std::string events_json = "[]";
  std::string matches_json = "[]";
  std::string cluster_json = "[]";
  std::string reviews_json = "[]";
  std::string cluster_id;
  /// The submitter's own fields of the latest ingestion (a load file's columns): a JSON object of
  /// strings, "{}" when none.
  std::string metadata_json = "{}";
};

/// A reviewer's decision, saved only while the document is still at `expected_version`.
struct review_decision {
  uuid tenant_id;
  uuid document_id;
  int64_t expected_version = 0;
  /// "approve" | "reject" | "reprocess".
  std::string action;
  std::string reviewer;
  /// approve: the new structured_data (JSON object text).
  std::string reviewed_data;
  /// approve: {"field": {"from":..., "to":...}} (JSON object text).
  std::string changes = "{}";
  /// approve: the plausibility checks that failed (JSON array text).
  std::string warnings = "[]";
  /// approve: what the correction teaches about the supplier, stored with the approval
  /// (supplier_knowledge): [{"supplier", "field", "value"}, ...] (JSON array text).
  std::string learned = "[]";
  /// reject: why.
  std::string reason;
  /// reprocess: the id of the new ingestion.
  uuid new_ingestion_id;
  /// reprocess: the providers chosen for the new ingestion (a transcription.provider and an
  /// extraction.provider name); empty: the configured one of the node that takes it.
  std::string transcription_provider;
  std::string extraction_provider;
};

/// How a save went.
struct review_saved {
  /// The document's version after the save.
  int64_t version = 0;
  /// reprocess: the ingestion created.
  std::optional<uuid> ingestion_id;
};

/// A fact reviewers taught about one of a tenant's suppliers, as the desk lists it.
struct learned_fact {
  uuid tenant_id;
  supplier_fact fact;
  /// The reviewer whose approval last taught it, and when (UTC, "YYYY-MM-DD HH:MM:SS").
  std::string learned_by;
  std::string learned_at;
};

/// Blocking, for request threads (never inside an actor); thread-safe. Errors:
/// "review.not_found" (permanent: unknown or another tenant's), "review.conflict" (permanent:
/// the document changed since `expected_version`, or is being processed; the message says
/// which and by whom), "db.timeout" and connection errors (transient).
class review_repository {
public:
  using timeout = std::chrono::milliseconds;
  virtual ~review_repository() = default;

  virtual result<review_queue> queue(const review_queue_filter& filter, timeout t) = 0;

  /// nullopt when unknown or not one of `tenants`' (a caller cannot tell the two apart).
  virtual result<std::optional<review_document>> document(const std::vector<uuid>& tenants,
                                                          uuid document_id, timeout t)
      = 0;

  /// Saves the decision: approve (structured_data replaced, needs_human_review cleared), reject
  /// (needs_human_review cleared), reprocess (a new in-progress ingestion of the same source,
  /// with the providers chosen); each with a document_review row and an audit event on the
  /// latest ingestion, in one transaction.
  virtual result<review_saved> save(const review_decision& decision, timeout t) = 0;

  /// What the reviewers of `tenants` taught about their suppliers, by tenant, supplier, field.
  virtual result<std::vector<learned_fact>> learned(const std::vector<uuid>& tenants, timeout t)
      = 0;
  /// Deletes one fact (false: there is none).
  virtual result<bool> forget(uuid tenant, const std::string& supplier, const std::string& field,
                              timeout t)
      = 0;
};

} // namespace ingestd
