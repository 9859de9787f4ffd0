// The job actor: one per queue message, owning one ingestion's lifecycle (seed 000's steps).
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/worker_context.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

/// Spawns the job for `msg`; it tracks its claim with `heartbeat` and quits when done.
job_actor spawn_job(caf::actor_system& sys, std::shared_ptr<worker_context> ctx,
                    heartbeat_actor heartbeat, queue_message msg);

} // namespace ingestd
