// The outbox port over PostgreSQL (table event_outbox).
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
  void mark_failed(std::vector<int64_t> ids, std::string error, callback<void> done) override;
  void prune(std::chrono::seconds retention, callback<int64_t> done) override;
  void register_sinks(std::vector<registered_sink> sinks, callback<void> done) override;
  void emit(std::string type, std::string payload, std::string ordering_key,
            callback<void> done) override;
  void read_stream(int64_t after_id, int limit, callback<std::vector<stream_event>> done) override;

private:
  std::unique_ptr<pg::pool> pool_;
};

} // namespace ingestd
