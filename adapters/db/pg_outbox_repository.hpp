// The outbox port over PostgreSQL (table event_outbox). One connection: the keys a take locks
// (session advisory locks) stay with it until the next take.
#pragma once

#include <memory>
#include <string>

#include "adapters/db/outbox_repository.hpp"
#include "adapters/db/pg_connection.hpp"

namespace ingestd {

/// Callbacks run on the repository's own connection thread.
class pg_outbox_repository final : public outbox_repository {
public:
  pg_outbox_repository(std::string database_url, pg::session_options session = {});
  ~pg_outbox_repository() override;

  void take(int limit, std::chrono::seconds hold, std::vector<std::string> sinks,
            callback<std::vector<outbox_row>> done) override;
  void mark_sent(std::vector<int64_t> ids, callback<void> done) override;
  void mark_failed(std::vector<int64_t> ids, std::string error, int max_attempts,
                   callback<int64_t> done) override;
  void prune(std::chrono::seconds retention, callback<int64_t> done) override;
  void dead_rows(int limit, callback<std::vector<dead_outbox_row>> done) override;
  void redeliver(std::vector<int64_t> ids, callback<int64_t> done) override;
  void figures(callback<outbox_figures> done) override;
  void register_sinks(std::vector<registered_sink> sinks, callback<void> done) override;
  void emit(std::string type, std::string payload, std::string ordering_key,
            callback<void> done) override;
  void read_stream(int64_t after_id, int limit, callback<std::vector<stream_event>> done) override;

private:
  /// The last take locked keys (read and written on the pool's one thread only; declared before
  /// the pool, which ends its thread first when destroyed).
  bool holds_keys_ = false;
  std::unique_ptr<pg::pool> pool_;
};

} // namespace ingestd
