// The match stage's database port: what its job reads of the document, the pre-processing
// writes, candidate retrieval, and the write phase in one transaction with the work item's
// completion. Implemented by pg_matching_repository.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "messages/matching.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"
#include "messages/work.hpp"

namespace ingestd {

/// What the match stage reads of its document after the claim.
struct matching_subject {
  /// The document's structured_data (JSON; "{}" when none).
  std::string structured_data = "{}";
  /// Its latest ingestion's file name, else its storage key.
  std::string file_name;
  /// The storage key of the transcription of the document's latest completed ingestion (empty
  /// when none).
  std::string transcription_file_path;
};

/// Asynchronous: every call returns at once and calls its callback exactly once from a database
/// thread; connection problems are transient ("pg.<SQLSTATE>", "pg.connection"); a fenced write
/// whose claim no longer holds is an error of class claim_lost. The claim is the work item's
/// (work_repository.hpp): the document's own.
class matching_repository {
public:
  virtual ~matching_repository() = default;

  /// The document's data, file name and latest transcription; a permanent error when it does
  /// not exist.
  virtual void load(uuid document_id, callback<matching_subject> done) = 0;

  /// Pre-processing writes (outside the write transaction, safe to redo): the features'
  /// normalized counterparty, references, kind, number, total, currency, date, searchable text
  /// and text hash. Fenced by the claim. Serialised per tenant with the write phases, each store
  /// takes the next place in the order of stores (features_seq).
  virtual void store_features(claim_ref ref, match_features features, callback<void> done) = 0;

  /// Up to `limit` documents of the tenant that may match (never the document itself; only
  /// documents whose features are stored), best first: same text hash, reference overlap
  /// (number in references either way, or equal numbers), trigram similarity of the normalized
  /// counterparty (pg_trgm), total within 1% and date within 90 days. Uses indexes; stays fast
  /// at 100,000 documents per tenant.
  virtual void candidates(uuid tenant_id, uuid document_id, match_features features, int limit,
                          callback<std::vector<match_document>> done)
      = 0;

  /// The write phase in one transaction, serialised per tenant (an advisory transaction lock):
  /// delete the document's edges to documents whose features were stored before its own (an
  /// edge to one stored later is that one's decision, made with this document in view, and
  /// stays: of two documents matched at once, neither erases what the other found), insert
  /// `edges` (each pair stored once, a < b), recompute cluster_id for every document in an
  /// affected cluster (the old cluster of the document and of each new neighbour: merged when
  /// joined, split when an edge disappeared) as the smallest document id of its connected
  /// component (a document without edges is its own cluster), and complete the work item
  /// (`outcome`). Fenced: a lost claim rolls everything back (claim_lost). Any failure leaves
  /// the previous state intact.
  virtual void write_matches(work_outcome outcome, std::vector<match_edge> edges,
                             callback<void> done)
      = 0;

  /// A document's edges (both directions) and the members of its cluster, for `ingestd matches`
  /// and the API.
  virtual void matches_of(uuid document_id,
                          callback<std::pair<std::vector<stored_match>, std::vector<uuid>>> done)
      = 0;
};

} // namespace ingestd
