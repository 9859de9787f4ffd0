// The queue port: what the worker needs from a message queue with SQS semantics. Implemented by
// sqs_queue (Amazon SQS over the HTTP engine) and postgres_queue (table queue_message).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "messages/queue_message.hpp"
#include "messages/result.hpp"

namespace ingestd {

/// Scheduling priority: 0..100, lower first.
constexpr int32_t min_priority = 0;
constexpr int32_t max_priority = 100;
constexpr int32_t default_priority = 50;

constexpr bool valid_priority(int64_t p) {
  return p >= min_priority && p <= max_priority;
}

/// A message to send, with an optional delay before it becomes visible.
struct outgoing_message {
  std::string body;
  std::chrono::seconds delay{0};
  /// 0..100, lower first: the Postgres queue serves by priority with ageing; SQS routes it to
  /// its priority class's queue (priority_queues).
  int32_t priority = default_priority;
  /// String attributes (name, value), for subscribers that filter (the event stream's SQS sink):
  /// SQS sends them as message attributes; the Postgres queue keeps only the body.
  std::vector<std::pair<std::string, std::string>> attributes = {};
  /// The tenant whose work it is (empty: none), for fair shares between tenants: the Postgres
  /// queue ranks it by the tenant's spacing (migration 019); SQS gets it as the MessageGroupId,
  /// which a standard queue's fair-queue feature uses to keep one tenant's backlog from delaying
  /// the others.
  std::string tenant = {};
};

/// A visibility change for one received message.
struct visibility_change {
  std::string receipt;
  std::chrono::seconds timeout{0};
};

/// The outcome of one entry of a batch call: batch calls can partly fail.
struct batch_entry_result {
  /// The receipt (delete, visibility) or the new message id (send).
  std::string ref;
  /// true when this entry failed; `error` says why.
  bool failed = false;
  ingestd::error error;
};

/// Depth figures for metrics and status.
struct queue_stats {
  int64_t visible = 0;
  int64_t in_flight = 0;
  int64_t delayed = 0;
  /// Age of the oldest message in seconds (0 when empty or unknown).
  int64_t oldest_age_seconds = 0;
};

/// Asynchronous: every call returns at once and calls its callback exactly once, from another
/// thread. Receipts from an earlier receive of the same message are stale: using one does
/// nothing (and is not an error for delete).
class queue {
public:
  virtual ~queue() = default;

  /// Long-polls up to `max_messages` (SQS: 1-10; the Postgres queue: 1-100) for up to `wait`;
  /// received messages stay invisible to other consumers for `visibility`. An empty vector means
  /// the wait ran out.
  virtual void receive(int max_messages, std::chrono::seconds wait, std::chrono::seconds visibility,
                       callback<std::vector<queue_message>> done)
      = 0;

  /// Deletes messages by receipt (batches of at most 10 for SQS; implementations split).
  virtual void remove(std::vector<std::string> receipts,
                      callback<std::vector<batch_entry_result>> done)
      = 0;

  /// Changes visibility timeouts (0 makes a message visible again at once).
  virtual void change_visibility(std::vector<visibility_change> changes,
                                 callback<std::vector<batch_entry_result>> done)
      = 0;

  /// Sends messages; each result's `ref` is the new message id.
  virtual void send(std::vector<outgoing_message> messages,
                    callback<std::vector<batch_entry_result>> done)
      = 0;

  virtual void stats(callback<queue_stats> done) = 0;

  /// "sqs" or "postgres", for logs.
  virtual std::string name() const = 0;
};

} // namespace ingestd
