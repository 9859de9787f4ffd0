// The relay: sends the outbox's rows (next jobs written in the transaction that completed the
// previous stage, and the status events) to their queues and event sinks, at least once.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "adapters/db/outbox_repository.hpp"
#include "adapters/notify/event_sink.hpp"
#include "adapters/queue/queue.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

class worker_metrics;

struct relay_settings {
  /// How often it looks for rows when the last look found fewer than a batch.
  std::chrono::milliseconds interval{1000};
  int batch = 100;
  /// How long a taken queue message is held from other relays while it is sent (a document's
  /// events are held by their key's lock instead, for as long as the relay sends them).
  std::chrono::seconds hold{60};
  /// Failed sends of a row before it is dead (kept with its last error, `ingestd events --dead`).
  int max_attempts = 50;
  /// Sent rows are deleted after this, checked every prune_interval.
  std::chrono::seconds retention{std::chrono::hours{24 * 7}};
  std::chrono::seconds prune_interval{std::chrono::hours{1}};
  /// An event sink that failed is given no event for this long, doubling per failure in a row up
  /// to sink_retry_max; one delivery resets it.
  std::chrono::milliseconds sink_retry_initial{500};
  std::chrono::milliseconds sink_retry_max{10'000};
};

/// `destinations`: the queues by the name the rows give. A row for an unknown queue stays
/// unsent, its error recorded, and is tried again after the hold.
/// `sinks`: the status event sinks by their destination ("events:webhook", "events:sqs"); each
/// gets its events one at a time per document, in order, and documents side by side. A sink that
/// fails is backed off (settings.sink_retry_*); the event it refused counts an attempt, the
/// document's later events wait behind it untried.
/// `metrics` (optional) counts the rows it declares dead.
relay_actor spawn_relay(caf::actor_system& sys, std::shared_ptr<outbox_repository> outbox,
                        std::map<std::string, std::shared_ptr<queue>> destinations,
                        relay_settings settings = {},
                        std::map<std::string, std::shared_ptr<event_sink>> sinks = {},
                        std::shared_ptr<worker_metrics> metrics = nullptr);

} // namespace ingestd
