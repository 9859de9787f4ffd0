// The intake repository over PostgreSQL: the per-content advisory lock, the document look-up and
// the insert-or-find of intake, and the JSON look-ups, run on the calling thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
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

  /// Each known document's file name, matching status and cluster, in no particular order;
  /// unknown ids are left out. For `ingestd matches` (any tenant: an operator's tool).
  result<std::vector<document_label>> document_labels(const std::vector<uuid>& document_ids,
                                                      timeout t);

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
