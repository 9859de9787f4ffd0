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

struct relay_settings {
  /// How often it looks for rows when the last look found fewer than a batch.
  std::chrono::milliseconds interval{1000};
  int batch = 100;
  /// How long a taken row is held from other relays while it is sent.
  std::chrono::seconds hold{60};
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
/// fails is backed off (settings.sink_retry_*), its undelivered events given back.
relay_actor spawn_relay(caf::actor_system& sys, std::shared_ptr<outbox_repository> outbox,
                        std::map<std::string, std::shared_ptr<queue>> destinations,
                        relay_settings settings = {},
                        std::map<std::string, std::shared_ptr<event_sink>> sinks = {});

} // namespace ingestd
