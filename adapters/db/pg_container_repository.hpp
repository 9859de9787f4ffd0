// The unpack stage's database port over PostgreSQL: a container's details, and its children
// written in the transaction that completes its unpacking.
#pragma once

#include <memory>
#include <string>

#include "adapters/db/container_repository.hpp"
#include "adapters/db/pg_connection.hpp"

namespace ingestd {

namespace pg {
class pool;
}

struct pg_container_options {
  /// Connection threads (each owns one connection).
  int pool_size = 1;
  pg::session_options session = {};
  /// The children's messages: outbox rows the relay sends (SQS), or rows of the Postgres queue.
  bool via_outbox = false;
};

/// Callbacks run on the pool's threads.
class pg_container_repository final : public container_repository {
public:
  explicit pg_container_repository(std::string database_url, const pg_container_options& opts = {});
  ~pg_container_repository() override;

  void load(uuid ingestion_id, callback<container_details> done) override;
  void complete_unpack(work_outcome outcome, unpack_completion completion,
                       callback<unpack_counts> done) override;

private:
  bool via_outbox_;
  std::shared_ptr<pg::pool> pool_;
};

} // namespace ingestd
