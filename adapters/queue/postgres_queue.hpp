// The queue port on PostgreSQL (table queue_message) with SQS semantics: visibility timeouts,
// a fresh receipt per receive, receive counts, delays, LISTEN/NOTIFY long polls, DLQ redrive.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adapters/db/pg_connection.hpp"
#include "adapters/queue/queue.hpp"
#include "messages/result.hpp"

namespace ingestd {

namespace pg {
class connection;
}

struct postgres_queue_options {
  /// Connection threads for receive, delete, visibility, send and stats.
  int pool_size = 2;
  /// A message received this many times is moved to the dead-letter queue on its next
  /// receive instead of being delivered (SQS maxReceiveCount); 0 turns redrive off.
  int max_receive_count = 0;
  /// The dead-letter queue's name (rows of the same table); empty means "<queue>-dlq".
  std::string dead_letter_queue;
  /// The deadlines of every statement. A parked long poll waits on the client, not in a
  /// statement, so it needs no longer one.
  pg::session_options session = {};
};

/// Callbacks run on the adapter's threads. Destroying the queue answers pending long polls
/// with what they have (nothing), then closes the connections.
class postgres_queue final : public queue {
public:
  postgres_queue(std::string database_url, std::string queue_name,
                 postgres_queue_options opts = {});
  ~postgres_queue() override;

  /// The most messages one receive takes (queue.max_messages): more than SQS's 10.
  static constexpr int max_receive = 100;

  void receive(int max_messages, std::chrono::seconds wait, std::chrono::seconds visibility,
               callback<std::vector<queue_message>> done) override;
  /// Deletes that arrive while one runs are sent together in the next statement.
  void remove(std::vector<std::string> receipts,
              callback<std::vector<batch_entry_result>> done) override;
  void change_visibility(std::vector<visibility_change> changes,
                         callback<std::vector<batch_entry_result>> done) override;
  void send(std::vector<outgoing_message> messages,
            callback<std::vector<batch_entry_result>> done) override;
  void stats(callback<queue_stats> done) override;
  std::string name() const override;

  /// The queue this adapter reads (and the dead-letter queue it redrives to).
  const std::string& queue_name() const;
  const std::string& dead_letter_queue() const;

  /// DELETE statements sent so far (fewer than remove() calls under load).
  uint64_t delete_statements() const;

private:
  struct impl;
  struct pending_delete;
  void run_deletes(pg::connection& conn, std::vector<pending_delete>& batch);
  std::unique_ptr<impl> impl_;
};

/// The Postgres queue backend's registry (table queue): `ingestd queues create` registers each
/// queue with its dead-letter redrive (idempotent: an existing queue's redrive is updated); a node
/// checks that its queues are registered before it starts. Blocking, for the command line.
struct postgres_queue_scheduling {
  /// Priority levels a waiting message gains per minute (0: strict priority).
  double ageing_per_minute = 1.0;
  /// Fair scheduling between tenants: within a priority, a tenant's messages rank as if sent no
  /// faster than one per this many seconds / its weight (0: by send time; migration 019).
  double fair_spacing_seconds = 1.0;
  /// (tenant id, weight) pairs; a tenant not listed has weight 1.
  std::vector<std::pair<std::string, double>> tenant_weights = {};
};

result<void> create_postgres_queue(const std::string& database_url, const std::string& name,
                                   const std::string& dead_letter_queue, int max_receive_count,
                                   const postgres_queue_scheduling& scheduling = {});
/// True when `name` is registered.
result<bool> postgres_queue_exists(const std::string& database_url, const std::string& name);

} // namespace ingestd
