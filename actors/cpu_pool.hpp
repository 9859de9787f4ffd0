// The CPU pool: detached workers for OpenCV and Tesseract, fed by a master that hands work only
// to idle workers, so CPU work never runs on CAF's cooperative scheduler threads.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/admission.hpp"
#include "adapters/support/cpu_executor.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

/// Where the workers run: each on its own thread (the daemon), or on the actor system's scheduler
/// (tests on CAF's deterministic scheduler, which detached actors escape).
enum class cpu_workers { detached, scheduled };

/// Spawns the master and `workers` workers (at least 1); at most `backlog` items wait. The pool
/// reports its backlog and its items' run time to `admission`.
cpu_pool_actor spawn_cpu_pool(caf::actor_system& sys, int workers, int backlog,
                              std::shared_ptr<node_admission> admission,
                              cpu_workers mode = cpu_workers::detached);

/// The pool as the cpu_executor that adapters (the local OCR provider) submit work to. Its
/// workers parse and render documents in `decoder`'s helper processes (adapters/sandbox): a
/// worker sends a request and waits for the answer within the work's deadline. Null: in process.
std::shared_ptr<cpu_executor>
make_cpu_executor(cpu_pool_actor pool, std::shared_ptr<sandbox::decoder> decoder = nullptr);

/// cores - reserved, at least 1.
int cpu_pool_size(int reserved);

} // namespace ingestd
