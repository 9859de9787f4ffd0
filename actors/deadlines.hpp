// The step deadlines of the node's jobs, and the actor that enforces them.
//
// A job's current step must end within its stage's step timeout of the job's last message (the
// deadline does not run while the step waits for a CPU worker or a provider's limits: the job
// ignores it then). Each job writes its deadline in the node's table when it handles a message,
// a write under a lock, and one sweep actor per node wakes every second and tells each job whose
// deadline passed. A receive timeout per job did the same, but CAF re-arms one at every message
// of the actor, and each re-arm wakes CAF's clock thread: about four wake-ups per document.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/fwd.hpp>

#include "messages/protocol.hpp"

namespace ingestd {

/// The node's table of job deadlines; any thread.
class step_deadlines {
public:
  using time_point = caf::actor_clock::time_point;

  /// How often the sweep looks: a deadline is heard of at most this late.
  static constexpr caf::timespan sweep_interval = std::chrono::seconds{1};

  /// The job `job` must be heard from by `at` (replaces its earlier deadline).
  void set(caf::abstract_actor* job, time_point at);
  /// The job ended.
  void remove(caf::actor_id job);
  /// The jobs whose deadline is at or before `now`, taken out of the table.
  std::vector<caf::actor> take_passed(time_point now);
  size_t size() const;

private:
  struct entry {
    caf::actor job;
    time_point at;
  };
  mutable std::mutex mtx_;
  std::unordered_map<caf::actor_id, entry> entries_;
};

/// The sweep over `table`: every sweep_interval, timeout_atom to each job whose deadline passed.
deadline_sweep_actor spawn_deadline_sweep(caf::actor_system& sys,
                                          std::shared_ptr<step_deadlines> table);

} // namespace ingestd
