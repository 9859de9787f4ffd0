// The heartbeat group: keeps every claimed message invisible and every claim's lease alive.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/node_context.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

heartbeat_actor spawn_heartbeat(caf::actor_system& sys, std::shared_ptr<node_context> ctx);

} // namespace ingestd
