// The poller: long-polls the ingestion queue and runs one job actor per message, never more
// than max_in_flight at once.
#pragma once

#include <memory>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/worker_context.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

poller_actor spawn_poller(caf::actor_system& sys, std::shared_ptr<worker_context> ctx,
                          std::vector<heartbeat_actor> heartbeats);

} // namespace ingestd
