// The sweeper: the safety net that re-enqueues ingestions nobody holds and no message revives.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/node_context.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

sweeper_actor spawn_sweeper(caf::actor_system& sys, std::shared_ptr<node_context> ctx);

} // namespace ingestd
