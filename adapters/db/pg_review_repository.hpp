// The review desk's repository over PostgreSQL: the queue, the document view and the reviewer's
// decisions, each one statement on a borrowed connection, on the calling thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "adapters/db/review_repository.hpp"

namespace ingestd {

/// Each call borrows an idle connection (or opens one) and gives it back; the deadline of a call
/// is the server's statement_timeout, set on a connection when it changes. A save is one
/// statement (document update, review row, audit event, and for a reprocess the new ingestion),
/// so it is all or nothing; the version check inside it refuses the second of two concurrent
/// saves.
class pg_review_repository final : public review_repository {
public:
  /// A reprocess's new ingestion gets its message on `ingest_queue`: an outbox row the relay
  /// sends (`via_outbox`, SQS) or a row of the Postgres queue.
  pg_review_repository(std::string database_url, std::string ingest_queue, bool via_outbox);
  ~pg_review_repository() override;
  pg_review_repository(const pg_review_repository&) = delete;
  pg_review_repository& operator=(const pg_review_repository&) = delete;

  result<review_queue> queue(const review_queue_filter& filter, timeout t) override;
  result<std::optional<review_document>> document(const std::vector<uuid>& tenants,
                                                  uuid document_id, timeout t) override;
  result<review_saved> save(const review_decision& decision, timeout t) override;
  result<std::vector<learned_fact>> learned(const std::vector<uuid>& tenants, timeout t) override;
  result<bool> forget(uuid tenant, const std::string& supplier, const std::string& field,
                      timeout t) override;

private:
  struct session;
  class borrowed;

  std::unique_ptr<session> borrow();
  void give_back(std::unique_ptr<session> s);
  result<review_saved> why_not_saved(const review_decision& d, timeout t);

  std::string database_url_;
  std::string ingest_queue_;
  bool via_outbox_ = false;
  std::mutex mtx_;
  std::vector<std::unique_ptr<session>> idle_;
};

} // namespace ingestd
