// The match stage's database port over PostgreSQL: the document's data, the fenced
// pre-processing writes, candidate retrieval on the indexes of migration 003, and the write phase
// in one transaction serialised per tenant.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "adapters/db/matching_repository.hpp"
#include "adapters/db/pg_connection.hpp"

namespace ingestd {

namespace pg {
class pool;
}

struct pg_matching_options {
  /// Connection threads (each owns one connection).
  int pool_size = 2;
  pg::session_options session = {};
  /// Messages of the next work a completion adds: outbox rows (SQS) or Postgres queue rows.
  bool via_outbox = false;
};

/// Callbacks run on the pool's threads. Every statement runs under the pool's session deadlines
/// (statement_timeout, lock_timeout, TCP user timeout): the write phase's wait for the tenant's
/// lock included. The tasks hold nothing of the repository, so a shared pool may outlive it.
class pg_matching_repository final : public matching_repository {
public:
  /// Its own pool of `opts.pool_size` connection threads (named "ingestd-match"): the daemon's
  /// choice, so that a write phase waiting for its tenant's lock never holds up ingestion's
  /// statements.
  explicit pg_matching_repository(std::string database_url, const pg_matching_options& opts = {});
  /// Over a pool shared with other users (e.g. a command-line tool's single connection).
  explicit pg_matching_repository(std::shared_ptr<pg::pool> pool);
  ~pg_matching_repository() override;
  pg_matching_repository(const pg_matching_repository&) = delete;
  pg_matching_repository& operator=(const pg_matching_repository&) = delete;

  void load(uuid document_id, callback<matching_subject> done) override;
  /// A date that is not a valid YYYY-MM-DD and a total that is not finite are stored as NULL.
  void store_features(claim_ref ref, match_features features, callback<void> done) override;
  /// A `limit` below 1 answers nothing; above 1000 is 1000.
  void candidates(uuid tenant_id, uuid document_id, match_features features, int limit,
                  callback<std::vector<match_document>> done) override;
  /// Edges to the same other document are stored once (the highest confidence wins). An edge to
  /// the document itself, to another tenant's document, with an empty kind or a confidence
  /// outside 0..1 is a permanent error, as is one to a document that does not exist (the
  /// foreign key refuses the insert): nothing is changed.
  void write_matches(work_outcome outcome, std::vector<match_edge> edges,
                     callback<void> done) override;
  /// Edges ordered by confidence (highest first); members ordered by id, the document itself
  /// included. An unknown document answers no edges and no members.
  void matches_of(uuid document_id,
                  callback<std::pair<std::vector<stored_match>, std::vector<uuid>>> done) override;

  /// The candidate retrieval statement, parameters $1 tenant, $2 document, $3 number,
  /// $4 references (text[] literal), $5 normalized counterparty, $6 total, $7 date, $8 text hash,
  /// $9 limit: for tests and the bench to EXPLAIN it.
  static const char* candidates_sql();

private:
  bool via_outbox_ = false;
  std::shared_ptr<pg::pool> pool_;
};

/// Bench and test support: inserts `count` synthetic documents of `tenant_id` with stored
/// features (matching succeeded, no edges, each its own cluster), in batches, as one would find
/// after matching a tenant's history: ~count/50 counterparties, invoice numbers, a few credit
/// notes referring to invoices, totals and dates spread over three years; then VACUUM ANALYZE. The
/// numbers are deterministic in `seed`. Answers the number inserted. With matching_status
/// "pending" their matching work items wait to be claimed.
result<int64_t> load_synthetic_match_documents(const std::string& database_url, uuid tenant_id,
                                               int64_t count, int64_t seed = 1,
                                               const std::string& matching_status = "succeeded");

/// Bench support: up to `count` of the tenant's documents with features and `matching_status`,
/// a pseudo-random sample, as candidate retrieval returns them (file_name is the file path).
result<std::vector<match_document>>
sample_synthetic_match_documents(const std::string& database_url, uuid tenant_id, int count,
                                 const std::string& matching_status = "succeeded");

} // namespace ingestd
