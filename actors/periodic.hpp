// The periodic actor: background work of the node done in bounded passes: retention
// (retention/pruner.hpp), the mailboxes (intake/mailbox_intake.hpp). Every interval it runs one
// pass, and the next at once while a pass says more is due. The actor has a thread of its own
// (a pass blocks on the database, storage or a mail server, each call within its deadline), so a
// pass never holds the scheduler's threads; one pass at a time, and a stopping node waits for
// the pass that runs.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <caf/fwd.hpp>

#include "messages/protocol.hpp"
#include "messages/result.hpp"

namespace ingestd {

/// Background work the periodic actor runs; the work logs and counts what its passes did.
struct periodic_task {
  /// What the work is, for the log ("retention", "mailboxes").
  std::string name;
  /// One bounded pass, blocking: true when more is due at once. An error is logged by the actor
  /// and the next pass comes after the interval.
  std::function<result<bool>()> pass;
  std::chrono::milliseconds interval{600'000};
};

/// Runs the first pass at once.
periodic_actor spawn_periodic(caf::actor_system& sys, periodic_task task);

} // namespace ingestd
