// The poller: long-polls one stage's queue and runs one job actor per message, never more than
// the stage's max_in_flight at once, nor more than worker.max_in_flight jobs of all stages.
#pragma once

#include <memory>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/node_context.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

poller_actor spawn_poller(caf::actor_system& sys, std::shared_ptr<node_context> ctx,
                          std::shared_ptr<const stage> stage,
                          std::vector<heartbeat_actor> heartbeats);

} // namespace ingestd
