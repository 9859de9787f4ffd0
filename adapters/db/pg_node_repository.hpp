// The node registry port over PostgreSQL (table worker_node, migration 006).
#pragma once

#include <memory>
#include <string>

#include "adapters/db/node_repository.hpp"
#include "adapters/db/pg_connection.hpp"

namespace ingestd {

/// One connection of its own ("ingestd-nodes"); callbacks run on its thread, in call order.
class pg_node_repository final : public node_repository {
public:
  explicit pg_node_repository(std::string database_url, pg::session_options session = {});
  ~pg_node_repository() override;

  void register_node(node_registration node, callback<void> done) override;
  void refresh(node_refresh node, callback<node_refresh_answer> done) override;
  void mark_stopped(std::string id, uuid incarnation, callback<void> done) override;
  void list(callback<std::vector<node_info>> done) override;
  void request_drain(std::optional<std::string> id,
                     callback<std::vector<std::string>> done) override;
  void prune(std::chrono::seconds retention, callback<int64_t> done) override;

private:
  std::unique_ptr<pg::pool> pool_;
};

} // namespace ingestd
