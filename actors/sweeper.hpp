// The sweeper: the safety net that sends a new message for work items whose message is gone.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/node_context.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

sweeper_actor spawn_sweeper(caf::actor_system& sys, std::shared_ptr<node_context> ctx);

} // namespace ingestd
