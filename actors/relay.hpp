// The relay: sends the outbox's rows (next jobs written in the transaction that completed the
// previous stage; later, status events) to their queues, at least once.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "adapters/db/outbox_repository.hpp"
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
};

/// `destinations`: the queues by the name the rows give. A row for an unknown queue stays
/// unsent, its error recorded, and is tried again after the hold.
relay_actor spawn_relay(caf::actor_system& sys, std::shared_ptr<outbox_repository> outbox,
                        std::map<std::string, std::shared_ptr<queue>> destinations,
                        relay_settings settings = {});

} // namespace ingestd
