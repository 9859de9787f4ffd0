// The intake repository over PostgreSQL: the per-content advisory lock, the document look-up and
// the insert-or-find of intake, and the JSON look-ups, run on the calling thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/db/intake_repository.hpp"

namespace ingestd {

namespace pg {
struct statement;
}

/// A document as `ingestd matches` names it.
struct document_label {
  uuid id;
  /// Its latest ingestion's file name, else its storage key.
  std::string file_name;
  /// Empty when NULL.
  std::string matching_status;
  std::string cluster_id;
};

/// A tenant as `ingestd tenants` lists it.
struct tenant_record {
  uuid id;
  std::string name;
  /// ISO 8601, as the database writes a timestamptz.
  std::string created_at;
  /// Its tokens that open it now (0 or 1: a rotation revokes the previous one).
  int64_t active_tokens = 0;
  /// When its current token was issued; empty without one.
  std::string token_created_at;
};

/// A tenant's recorded use of the providers in one month (`ingestd usage`).
struct usage_row {
  uuid tenant_id;
  /// Its name when it is a registered tenant (`ingestd tenants`), else empty.
  std::string tenant_name;
  /// "YYYY-MM" (UTC) of the ingestions' creation.
  std::string month;
  int64_t ingestions = 0;
  int64_t completed = 0;
  /// LLM tokens of the completed extractions.
  int64_t llm_input_tokens = 0;
  int64_t llm_output_tokens = 0;
  /// Pages Document AI read, and pages read locally (Tesseract, a PDF's own text).
  int64_t document_ai_pages = 0;
  int64_t local_pages = 0;
};

/// Each call borrows an idle connection (or opens one) and gives it back; a content_lock keeps
/// its connection until it is destroyed, because the advisory lock belongs to that session.
/// Deadlines are the server's statement_timeout, set on a connection when it changes.
/// A content_lock must not outlive the repository. Not pg::pool: its threads would add a hand-off
/// per statement to callers that block anyway, and lock holders could queue behind lock waiters on
/// them.
class pg_intake_repository final : public intake_repository {
public:
  /// `via_outbox`: the first message of an ingestion goes out as an outbox row the relay sends
  /// (SQS); false: a row of the Postgres queue.
  explicit pg_intake_repository(std::string database_url, bool via_outbox = false);
  ~pg_intake_repository() override;
  pg_intake_repository(const pg_intake_repository&) = delete;
  pg_intake_repository& operator=(const pg_intake_repository&) = delete;

  result<std::unique_ptr<content_lock>>
  lock_content(uuid tenant_id, const std::string& content_hash, timeout t) override;
  result<std::optional<known_document>>
  find_by_source_key(uuid tenant_id, const std::string& source_key, timeout t) override;
  result<intake_result> create_ingestion(const intake_request& request, timeout t) override;
  result<std::optional<std::string>> document_json(uuid tenant_id, uuid document_id,
                                                   timeout t) override;
  result<std::optional<std::string>> ingestion_json(uuid tenant_id, uuid ingestion_id,
                                                    timeout t) override;
  result<std::string> review_json(int limit, timeout t) override;
  result<std::string> documents_json(int limit, timeout t) override;
  result<std::optional<ingestion_status>> find_ingestion(uuid ingestion_id, timeout t) override;
  result<status_summary> summarize(timeout t) override;
  result<void> ping(timeout t) override;
  result<cancel_result> cancel_ingestion(uuid ingestion_id, std::optional<uuid> tenant_id,
                                         const std::string& who, timeout t) override;

  /// summarize()'s matching figures alone (the other fields stay 0), for /metrics: the documents
  /// by matching status and matching in progress over 10 minutes, without the ingestion counts.
  result<status_summary> summarize_matching(timeout t);

  /// The open work per tenant and stage, the `limit` largest first (for /metrics).
  result<std::vector<tenant_work>> tenant_work_figures(int limit, timeout t);

  result<std::vector<retried_item>> retry_failed(const retry_request& request, timeout t) override;

  // -- batches (pg_intake_batches.cpp) --------------------------------------------------------
  result<batch_info> open_batch(uuid tenant_id, const std::string& name, timeout t) override;
  result<std::optional<batch_info>> seal_batch(uuid batch_id, std::optional<uuid> tenant_id,
                                               timeout t) override;
  result<void> note_duplicate(uuid batch_id, uuid live_ingestion_id, timeout t) override;
  result<std::optional<batch_info>> find_batch(uuid batch_id, std::optional<uuid> tenant_id,
                                               timeout t) override;
  result<std::vector<batch_info>> list_batches(std::optional<uuid> tenant_id, int limit,
                                               timeout t) override;
  result<std::vector<uuid>> batch_in_progress(uuid batch_id, timeout t) override;

  /// Each known document's file name, matching status and cluster, in no particular order;
  /// unknown ids are left out. For `ingestd matches` (any tenant: an operator's tool).
  result<std::vector<document_label>> document_labels(const std::vector<uuid>& document_ids,
                                                      timeout t);

  // -- tenants and their intake credentials (`ingestd tenants`, the HTTP intake) -------------

  /// A new tenant whose token has the digest `token_sha256`; nullopt when a tenant with this id
  /// or name exists (nothing is changed then).
  result<std::optional<tenant_record>> add_tenant(uuid id, const std::string& name,
                                                  const std::string& token_sha256, timeout t);
  /// Every tenant, by name.
  result<std::vector<tenant_record>> tenants(timeout t);
  /// Revokes the tenant's tokens and gives it one with the digest `token_sha256`, in one
  /// transaction. The tenant is named by its id or else its name; nullopt when there is none.
  result<std::optional<tenant_record>> rotate_tenant_token(std::optional<uuid> id,
                                                           const std::string& name,
                                                           const std::string& token_sha256,
                                                           timeout t);
  /// The tenant a token opens, by the token's digest; nullopt when no active token has it.
  result<std::optional<uuid>> tenant_of_token(const std::string& token_sha256, timeout t);
  /// The recorded use per tenant and month, oldest month first; of one tenant when given; of the
  /// ingestions created at or after `since` (as PostgreSQL reads a timestamptz) when not empty.
  result<std::vector<usage_row>> usage(std::optional<uuid> tenant, const std::string& since,
                                       timeout t);
  /// Whether any tenant has an active token (the intake then requires one).
  result<bool> any_tenant_token(timeout t);

private:
  /// One connection and the statement_timeout last set on it.
  struct session;
  /// A session taken from the idle ones for one call, given back when it goes.
  class borrowed;
  class pg_content_lock;

  std::unique_ptr<session> borrow();
  void give_back(std::unique_ptr<session> s);
  result<status_summary> summary_of(const pg::statement& st, timeout t);
  result<std::optional<std::string>> json_query(const pg::statement& st,
                                                std::vector<std::string> params, timeout t);

  std::string database_url_;
  bool via_outbox_ = false;
  std::mutex mtx_;
  std::vector<std::unique_ptr<session>> idle_;
};

} // namespace ingestd
