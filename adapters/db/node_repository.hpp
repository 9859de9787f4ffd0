// The node registry port: the cluster's nodes in the database, the single
// source of truth. Each `ingestd run` registers, refreshes its row with the heartbeat and reads
// drain requests from it; the command line lists the nodes and asks them to drain.
// Implemented by pg_node_repository.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// What a node says about itself when it starts.
struct node_registration {
  /// worker.id, else host-pid. A row with the same id is taken over (a restarted node).
  std::string id;
  /// Fresh per start: an older process with the same id no longer refreshes the row.
  uuid incarnation;
  std::string host;
  int32_t pid = 0;
  std::string version;
  /// The stages served, comma-separated.
  std::string stages;
  /// The size classes of its ingest stage, comma-separated ("small,large"; empty: none).
  std::string classes;
  int32_t capacity = 0;
  /// Not seen for this long (and not stopped): shown as lost.
  std::chrono::seconds lease{0};
};

/// What a node says on each heartbeat refresh.
struct node_refresh {
  std::string id;
  uuid incarnation;
  int32_t in_flight = 0;
  int32_t done_last_minute = 0;
  bool draining = false;
  /// Weighted slots in use over worker.capacity_slots (jobs over max_in_flight without a budget).
  double capacity_usage = 0;
};

struct node_refresh_answer {
  /// false: the row is no longer this process's (another took the id over, or it was pruned).
  bool found = false;
  /// `ingestd drain` (or drain --all) asked this node to drain.
  bool drain_requested = false;
};

/// One row as `ingestd nodes` shows it.
struct node_info {
  std::string id;
  std::string host;
  int32_t pid = 0;
  std::string version;
  std::string stages;
  std::string classes;
  int32_t capacity = 0;
  int32_t in_flight = 0;
  int32_t done_last_minute = 0;
  /// As of the last refresh (0..1, above 1 while a task heavier than the budget runs alone).
  double capacity_usage = 0;
  /// running, draining, stopped, or lost (not stopped and not seen for its lease), computed when
  /// read.
  std::string state;
  bool drain_requested = false;
  /// ISO 8601, UTC.
  std::string started_at;
  std::string last_seen;
  int64_t last_seen_seconds_ago = 0;
};

/// Asynchronous like repository: every call returns at once and calls its callback exactly once
/// from a database thread.
class node_repository {
public:
  virtual ~node_repository() = default;

  /// Inserts the node's row, or takes over the row of its id (state running, drain request
  /// cleared).
  virtual void register_node(node_registration node, callback<void> done) = 0;

  /// Refreshes last_seen, in flight, done in the last minute and the state (running or
  /// draining) of this incarnation's row; answers whether a drain was requested.
  virtual void refresh(node_refresh node, callback<node_refresh_answer> done) = 0;

  /// The node has stopped (its last write).
  virtual void mark_stopped(std::string id, uuid incarnation, callback<void> done) = 0;

  /// Every row, by id.
  virtual void list(callback<std::vector<node_info>> done) = 0;

  /// Asks the node `id` (nullopt: every node not stopped) to drain; answers the ids asked.
  virtual void request_drain(std::optional<std::string> id, callback<std::vector<std::string>> done)
      = 0;

  /// Deletes the rows not seen for longer than `retention` (stopped or lost nodes: a live node
  /// refreshes its row every heartbeat); answers how many.
  virtual void prune(std::chrono::seconds retention, callback<int64_t> done) = 0;
};

} // namespace ingestd
