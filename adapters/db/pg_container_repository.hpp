// The unpack stage's database port over PostgreSQL: the children of a container written in the
// transaction that completes its unpacking (DESIGN §8's outbox: next jobs with the state change).
#pragma once

#include <memory>
#include <string>

#include "adapters/db/container_repository.hpp"
#include "adapters/db/pg_connection.hpp"

namespace ingestd {

namespace pg {
class pool;
}

/// Where the children's messages go.
struct container_queues {
  /// The ingest stage's queue (a child that is a document) and the unpack stage's (a child that
  /// is a container).
  std::string ingest_queue;
  std::string unpack_queue;
  /// true: outbox rows the relay sends (SQS); false: rows of the Postgres queue.
  bool via_outbox = false;
};

/// Callbacks run on the pool's threads.
class pg_container_repository final : public container_repository {
public:
  pg_container_repository(std::string database_url, container_queues queues, int pool_size = 1,
                          pg::session_options session = {});
  ~pg_container_repository() override;

  void depth_of(uuid document_id, callback<int32_t> done) override;
  void complete_unpack(lease_ref ref, unpack_completion completion, callback<unpack_counts> done) override;
  void rescue_stranded(std::chrono::seconds stale_threshold, int limit, callback<std::vector<uuid>> done) override;

private:
  container_queues queues_;
  std::shared_ptr<pg::pool> pool_;
};

} // namespace ingestd
