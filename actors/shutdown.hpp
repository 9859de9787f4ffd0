// The shutdown coordinator: SIGTERM/SIGINT drain the worker gracefully; a second signal, or the
// end of the grace period, makes every job give its work back at once.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/worker_context.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

/// `others` are stopped (exit) once the poller has drained; `done` is called last.
shutdown_actor spawn_shutdown(caf::actor_system& sys, std::shared_ptr<worker_context> ctx,
                              poller_actor poller, std::vector<caf::actor> others,
                              std::function<void()> done = {});

} // namespace ingestd
