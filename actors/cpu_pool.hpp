// The CPU pool: detached workers for OpenCV and Tesseract, fed by a master that hands work only
// to idle workers, so CPU work never runs on CAF's cooperative scheduler threads.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/metrics.hpp"
#include "adapters/support/cpu_executor.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

/// Spawns the master and `workers` detached workers (at least 1); at most `backlog` items wait.
cpu_pool_actor spawn_cpu_pool(caf::actor_system& sys, int workers, int backlog,
                              std::shared_ptr<worker_metrics> metrics);

/// The pool as the cpu_executor that adapters (the local OCR provider) submit work to.
std::shared_ptr<cpu_executor> make_cpu_executor(cpu_pool_actor pool);

/// cores - reserved, at least 1.
int cpu_pool_size(int reserved);

} // namespace ingestd
