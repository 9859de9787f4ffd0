// The outbox port: rows written in the transaction that changed the state (queue messages of
// hand-offs on SQS, the status events), sent at least once by the relay actor. Implemented by
// pg_outbox_repository.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "messages/result.hpp"

namespace ingestd {

struct outbox_row {
  int64_t id = 0;
  /// The queue (by name) the body goes to.
  std::string destination;
  std::string body;
  /// Status events: the event's id, and the key (its document, or its worker) within which the
  /// relay keeps the order. Empty for next jobs.
  std::string event_id = {};
  std::string ordering_key = {};
  /// A queue message's priority (0..100, lower first): for a queue that serves by it.
  int32_t priority = 50;
  /// A queue message's tenant (empty: none), for fair shares between tenants.
  std::string tenant = {};
};

/// The status event stream's destination in the outbox ('events': the stream itself, written as
/// sent) and each sink's ('events:<sink>'), as ingestd_emit_event writes them.
inline constexpr const char* event_stream_destination = "events";
inline std::string event_sink_destination(const std::string& sink) {
  return std::string{event_stream_destination} + ":" + sink;
}

/// An event sink as a node registers it.
struct registered_sink {
  /// "webhook", "sqs", "notify".
  std::string name;
  /// The event types it takes; empty: every type.
  std::vector<std::string> types = {};
};

/// A row that failed outbox.max_attempts sends and is no longer taken (`ingestd events --dead`).
struct dead_outbox_row {
  int64_t id = 0;
  std::string destination;
  std::string body;
  int32_t attempts = 0;
  std::string last_error;
  /// ISO 8601, UTC.
  std::string created_at;
  std::string dead_at;
};

/// The outbox's figures for /metrics: rows still to send, the age of the oldest of them, and the
/// dead rows.
struct outbox_figures {
  int64_t pending = 0;
  double oldest_pending_seconds = 0;
  int64_t dead = 0;
};

/// One event of the stream, as `ingestd events` prints it.
struct stream_event {
  int64_t id = 0;
  /// The event as JSON: id, type, time, tenant_id, document_id, ingestion_id, payload.
  std::string body;
};

/// Asynchronous like repository: every call returns at once and calls its callback exactly once
/// from a database thread.
class outbox_repository {
public:
  virtual ~outbox_repository() = default;

  /// Up to `limit` rows still to send (neither sent nor dead), oldest first. Event rows only for
  /// the sinks in `sinks` (their destinations, "events:webhook"): a relay takes no event it
  /// cannot deliver now.
  /// Rows without an ordering key (queue messages) are held for `hold` so that another relay
  /// skips them; a relay that dies leaves them to the next once the hold ends.
  /// Rows with a key come with the key's lock, every unsent row of the key in id order: no other
  /// relay takes a row of that key (destination and key) until this one's next take, or until
  /// it is gone, however long its sends take. So one document's events go out through one relay
  /// at a time, in order.
  virtual void take(int limit, std::chrono::seconds hold, std::vector<std::string> sinks,
                    callback<std::vector<outbox_row>> done)
      = 0;

  /// The rows were sent.
  virtual void mark_sent(std::vector<int64_t> ids, callback<void> done) = 0;

  /// Sending the rows failed: each one's attempt counted, the error kept, the hold dropped so
  /// they go next time; a row whose attempts reach `max_attempts` is dead instead (never taken
  /// again unless redelivered). Answers how many became dead.
  virtual void mark_failed(std::vector<int64_t> ids, std::string error, int max_attempts,
                           callback<int64_t> done)
      = 0;

  /// Deletes rows sent, or dead, longer ago than `retention`; answers how many.
  virtual void prune(std::chrono::seconds retention, callback<int64_t> done) = 0;

  /// Up to `limit` dead rows, the most recently dead first.
  virtual void dead_rows(int limit, callback<std::vector<dead_outbox_row>> done) = 0;

  /// Gives dead rows back to the relay with their attempts reset (`ids`; empty: every dead row);
  /// answers how many.
  virtual void redeliver(std::vector<int64_t> ids, callback<int64_t> done) = 0;

  /// The figures for /metrics.
  virtual void figures(callback<outbox_figures> done) = 0;

  /// Registers the event sinks this node delivers to ("webhook", "sqs", "notify"), each with the
  /// event types it takes (empty: all): from now on every event of those types gets a row for
  /// each. Registering again replaces the types.
  virtual void register_sinks(std::vector<registered_sink> sinks, callback<void> done) = 0;

  /// Writes an event that no other state change carries (WORKER_STARTED, WORKER_FINISHED):
  /// `payload` a JSON object, ordered under `ordering_key`.
  virtual void emit(std::string type, std::string payload, std::string ordering_key,
                    callback<void> done)
      = 0;

  /// Up to `limit` events of the stream after `after_id`, oldest first.
  virtual void read_stream(int64_t after_id, int limit, callback<std::vector<stream_event>> done)
      = 0;
};

} // namespace ingestd
