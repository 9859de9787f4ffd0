// The matching stage's database port (seed 003): the document's matching status with a fenced
// claim, the pre-processing writes, candidate retrieval, and the write phase in one transaction.
// Implemented by pg_matching_repository over the same pool of connection threads as repository.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "messages/ingestion.hpp"
#include "messages/matching.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// A document claimed for matching.
struct matching_claim {
  uuid document_id;
  uuid claim_token;
  uuid tenant_id;
  /// Deliveries before this one (matching_attempts counts every delivery, this one included,
  /// so this is matching_attempts - 1).
  int32_t attempt_count = 0;
  std::string file_name;
  std::string content_hash;
  /// The document's structured_data (JSON; "{}" when none).
  std::string structured_data;
  /// The storage key of the transcription of the document's latest completed ingestion (empty
  /// when none).
  std::string transcription_file_path;
};

/// Asynchronous like repository: every call returns at once and calls its callback exactly once
/// from a database thread; connection problems are transient ("pg.<SQLSTATE>", "pg.connection");
/// a fenced write whose token no longer matches is an error of class claim_lost. A lease_ref's
/// ingestion_id field holds the document id here.
class matching_repository {
public:
  virtual ~matching_repository() = default;

  /// Claims the document for matching when its matching_status is `pending`, or `in-progress`
  /// with an expired lease (a crash): sets `in-progress`, claim_token, claimed_by, lease, and
  /// counts the delivery (matching_attempts + 1). A crash's redelivery that reaches
  /// `max_attempts` deliveries ends `failed` with matching_error naming the crash instead
  /// (nullopt). nullopt also when not claimable (held by a live claim, succeeded, failed, NULL,
  /// unknown id).
  virtual void claim(uuid document_id, uuid claim_token, std::string worker_id,
                     std::chrono::seconds lease, int32_t max_attempts,
                     callback<std::optional<matching_claim>> done) = 0;

  /// The matching state of an unclaimed document, in the job lifecycle's terms: succeeded is
  /// `completed`, failed `failed`, a live claim `held`, pending or expired `claimable`, no such
  /// document or matching_status NULL `unknown`.
  virtual void state(uuid document_id, callback<ingestion_state> done) = 0;

  /// Pre-processing writes (outside the write transaction, safe to redo): the features'
  /// normalized counterparty, references, kind, number, total, currency, date, searchable text
  /// and text hash. Fenced by the claim.
  virtual void store_features(lease_ref ref, match_features features, callback<void> done) = 0;

  /// Up to `limit` documents of the tenant that may match (never the document itself; only
  /// documents whose features are stored), best first: same text hash, reference overlap
  /// (number in references either way, or equal numbers), trigram similarity of the normalized
  /// counterparty (pg_trgm), total within 1% and date within 90 days. Uses indexes; stays fast
  /// at 100,000 documents per tenant.
  virtual void candidates(uuid tenant_id, uuid document_id, match_features features, int limit,
                          callback<std::vector<match_document>> done) = 0;

  /// The write phase in one transaction, serialised per tenant (an advisory transaction lock):
  /// delete the document's edges, insert `edges` (each pair stored once, a < b), recompute
  /// cluster_id for every document in an affected cluster (the old cluster of the document and
  /// of each new neighbour: merged when joined, split when an edge disappeared) as the smallest
  /// document id of its connected component (a document without edges is its own cluster), set
  /// matching_status `succeeded`, clear the claim and matching_error. Fenced: a lost claim rolls
  /// everything back (claim_lost). Any failure leaves the previous state intact.
  virtual void write_matches(lease_ref ref, std::vector<match_edge> edges, callback<void> done) = 0;

  /// A failed matching attempt: matching_error recorded, claim cleared; `failed` (with
  /// matching_failed_at) when the error is permanent or matching_attempts reached
  /// record.max_attempts, else back to `pending`. The answer's attempt_count is
  /// matching_attempts.
  virtual void record_failure(lease_ref ref, failure_record record, callback<failure_outcome> done) = 0;

  /// Gives the claim up (shutdown, drain, database trouble): back to `pending`, the delivery not
  /// counted (matching_attempts - 1), claim cleared.
  virtual void release(lease_ref ref, callback<void> done) = 0;

  /// Extends leases in one statement; answers the refs whose claim was lost.
  virtual void renew_leases(std::vector<lease_ref> refs, std::chrono::seconds lease,
                            callback<std::vector<lease_ref>> done) = 0;

  /// The matching stage's net (the sweeper's): under a cluster-wide advisory lock, finds
  /// `pending` documents whose message was last seen (made, received, renewed, given back) more
  /// than `stale_threshold` ago and that no message of the Postgres queue `queue_name` names;
  /// marks them seen now and returns their ids for re-enqueueing. Empty when another node holds
  /// the lock. The caller makes the threshold longer than any invisibility the queue gives a
  /// matching message (the longest back-off included).
  virtual void rescue_stranded(std::string queue_name, std::chrono::seconds stale_threshold, int limit,
                               callback<std::vector<uuid>> done) = 0;

  /// A document's edges (both directions) and the members of its cluster, for `ingestd matches`
  /// and the API.
  virtual void matches_of(uuid document_id,
                          callback<std::pair<std::vector<stored_match>, std::vector<uuid>>> done) = 0;
};

} // namespace ingestd
