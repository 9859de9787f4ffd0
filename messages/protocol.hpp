// The actor protocol of a node: atoms, the type-ID block, and every typed actor interface with a
// comment per handler. Only actors/ and the tests of actors include this (CAF is heavy).
//
// Port calls (queue, storage, database, OCR, extraction) answer on other threads; how an actor
// receives those answers is private to actors/ (actors/continuation.hpp) and extends these
// interfaces there: no interface here carries a closure.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/type_id.hpp>
#include <caf/typed_actor.hpp>

#include "messages/cpu_job.hpp"
#include "messages/error.hpp"
#include "messages/queue_message.hpp"
#include "messages/uuid.hpp"
#include "messages/work.hpp"

namespace ingestd {

/// How a job ended, for the embedding program and the tests (see worker_observer).
enum class job_result : uint8_t {
  completed, ///< the stage's outcome stored, message deleted
  failed,    ///< failed for good (permanent error or max attempts): human review
  retrying,  ///< transient failure recorded; the queue redelivers after the back-off
  skipped,   ///< not claimable: finished already (message deleted) or held by another worker
  invalid,   ///< the body was not a work item's id: message deleted
  lost,      ///< the claim or the message was lost to another worker: stopped, nothing written
  released,  ///< given back (shutdown, the database gone, no CPU worker in time)
  abandoned, ///< an infrastructure error before the claim: the message reappears by itself
  cancelled, ///< cancelled while it ran: stopped at a step boundary, recorded, message deleted
  moved,     ///< moved to another size class, whose queue has its message now
};

std::string_view to_string(job_result x);

struct job_outcome {
  std::string message_id;
  /// The work item the message named; nil when the body was not a UUID.
  uuid item;
  /// The stage's label ("ingest.small", "match").
  std::string stage;
  job_result result = job_result::abandoned;
  /// Why, for anything but `completed`.
  std::string detail;
  int32_t attempt_count = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_outcome& x) {
  auto r = static_cast<uint8_t>(x.result);
  auto res = f(caf::meta::type_name("job_outcome"), x.message_id, x.item, x.stage, r, x.detail,
               x.attempt_count);
  x.result = static_cast<job_result>(r);
  return res;
}

struct stage;

/// A claimed message the heartbeat keeps alive.
struct tracked_claim {
  std::string receipt;
  claim_ref claim;
  caf::actor job;
  /// When the message was received (the 12-hour SQS visibility total counts from here).
  std::chrono::steady_clock::time_point received_at;
  /// Whose queue the message is on.
  std::shared_ptr<const ingestd::stage> stage;
  /// For the log lines about the claim (the job's own fields).
  uuid document_id;
  uuid tenant_id;
};

} // namespace ingestd

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ingestd::cpu_job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ingestd::tracked_claim)

CAF_BEGIN_TYPE_ID_BLOCK(ingestd, caf::first_custom_type_id)
CAF_ADD_TYPE_ID(ingestd, (ingestd::uuid))
CAF_ADD_TYPE_ID(ingestd, (ingestd::error))
CAF_ADD_TYPE_ID(ingestd, (ingestd::queue_message))
CAF_ADD_TYPE_ID(ingestd, (ingestd::audit_event))
CAF_ADD_TYPE_ID(ingestd, (ingestd::job_outcome))
CAF_END_TYPE_ID_BLOCK(ingestd)

// Atoms: at most 10 characters of text.
CAF_ADD_ATOM(ingestd, ingestd, poll_atom, "poll")
CAF_ADD_ATOM(ingestd, ingestd, stop_atom, "stop")
CAF_ADD_ATOM(ingestd, ingestd, force_atom, "force")
CAF_ADD_ATOM(ingestd, ingestd, drained_atom, "drained")
CAF_ADD_ATOM(ingestd, ingestd, lost_atom, "lost")
CAF_ADD_ATOM(ingestd, ingestd, track_atom, "track")
CAF_ADD_ATOM(ingestd, ingestd, untrack_atom, "untrack")
CAF_ADD_ATOM(ingestd, ingestd, tick_atom, "tick")
CAF_ADD_ATOM(ingestd, ingestd, flush_atom, "flush")
CAF_ADD_ATOM(ingestd, ingestd, run_atom, "run")
CAF_ADD_ATOM(ingestd, ingestd, idle_atom, "idle")
CAF_ADD_ATOM(ingestd, ingestd, shutdown_atom, "shutdown")
CAF_ADD_ATOM(ingestd, ingestd, timeout_atom, "timeout")
CAF_ADD_ATOM(ingestd, ingestd, cancel_atom, "cancel")
/// The private answers of port calls (actors/continuation.hpp).
CAF_ADD_ATOM(ingestd, ingestd, resume_atom, "resume")

namespace ingestd {

/// One job: a queue message of one stage, from its claim to its acknowledgement
/// (actors/job.cpp).
using job_actor = caf::typed_actor<
    /// The heartbeat could not keep the message or the claim: stop, write nothing more.
    caf::reacts_to<lost_atom, std::string>,
    /// Shutdown past its grace period: give the claim and the message back, then quit.
    caf::reacts_to<stop_atom>,
    /// Its work was cancelled (the heartbeat saw the request): stop at the next step boundary,
    /// record `cancelled`, delete the message.
    caf::reacts_to<cancel_atom>,
    /// Its step's deadline passed (the node's deadline sweep, actors/deadlines.hpp): the step
    /// fails with it, unless a message came since or the step waits.
    caf::reacts_to<timeout_atom>>;

/// The poller of one stage (actors/poller.cpp).
using poller_actor = caf::typed_actor<
    /// Receive again if there is room (also the back-off timer after a receive error).
    caf::reacts_to<poll_atom>,
    /// Stop receiving once the current receive returns; answer drained_atom to `listener` when
    /// no job is left.
    caf::reacts_to<stop_atom, caf::actor>,
    /// Tell every running job to give its work back now (grace period over, or second signal).
    caf::reacts_to<force_atom>>;

/// One of the heartbeat actors (actors/heartbeat.cpp).
using heartbeat_actor = caf::typed_actor<
    /// Start keeping this claim and its message alive.
    caf::reacts_to<track_atom, tracked_claim>,
    /// Stop; the job is done with it.
    caf::reacts_to<untrack_atom, uuid>,
    /// The periodic tick: extend visibility and renew leases in batches.
    caf::reacts_to<tick_atom>,
    /// Extend the messages tracked since the last tick (they arrived with the queue's short
    /// default visibility).
    caf::reacts_to<flush_atom>>;

/// The master of the CPU pool (actors/cpu_pool.cpp).
using cpu_pool_actor = caf::typed_actor<
    /// Run this work on an idle worker (or queue it; `expired` runs when the backlog is full or
    /// the deadline passes first).
    caf::reacts_to<run_atom, cpu_job>,
    /// A worker finished its work item and can take another.
    caf::reacts_to<idle_atom, caf::actor>>;

/// The shutdown coordinator (actors/shutdown.cpp).
using shutdown_actor = caf::typed_actor<
    /// SIGTERM/SIGINT (or a programmatic stop): the first starts the graceful drain, the second
    /// forces release and exit.
    caf::reacts_to<shutdown_atom>,
    /// A poller has no job left.
    caf::reacts_to<drained_atom>,
    /// The grace period ran out.
    caf::reacts_to<timeout_atom, uint64_t>>;

/// The outbox relay (actors/relay.cpp).
using relay_actor = caf::typed_actor<
    /// Look for rows to send.
    caf::reacts_to<tick_atom>,
    /// Prune rows sent longer ago than the retention.
    caf::reacts_to<flush_atom>>;

/// The node's row in the cluster's registry (actors/node_registry.cpp).
using node_registry_actor = caf::typed_actor<
    /// Refresh the row (every heartbeat) and read the drain request.
    caf::reacts_to<tick_atom>,
    /// Delete the rows of nodes stopped or lost longer ago than the retention.
    caf::reacts_to<flush_atom>>;

/// The periodic actor (actors/periodic.cpp).
using periodic_actor = caf::typed_actor<
    /// Run a pass.
    caf::reacts_to<tick_atom>>;

/// The sweep of the node's job deadlines (actors/deadlines.cpp).
using deadline_sweep_actor = caf::typed_actor<
    /// Tell every job whose deadline passed (re-armed first).
    caf::reacts_to<tick_atom>>;

/// The sweeper (actors/sweeper.cpp).
using sweeper_actor = caf::typed_actor<
    /// Sweep every stage the node serves (re-armed first).
    caf::reacts_to<tick_atom>>;

} // namespace ingestd
