// The periodic actor (see periodic.hpp). Detached: its passes block on its own thread.
//
//   tick ──pass──► more due? tick now : tick after the interval
//            └─error (logged)───────► tick after the interval
#include "actors/periodic.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

struct periodic_state {
  static inline const char* name = "ingestd.periodic";
};

using periodic_ptr = periodic_actor::stateful_pointer<periodic_state>;

periodic_actor::behavior_type periodic(periodic_ptr self, periodic_task task) {
  self->send(self, tick_atom_v);
  return {
      [self, task = std::move(task)](tick_atom) {
        auto more = task.pass();
        if (!more)
          log::warn("a periodic pass failed",
                    {{"work", task.name}, {"error", more.error().describe()}});
        if (more && *more)
          self->send(self, tick_atom_v);
        else
          self->delayed_send(self, task.interval, tick_atom_v);
      },
  };
}

} // namespace

periodic_actor spawn_periodic(caf::actor_system& sys, periodic_task task) {
  return sys.spawn<caf::detached>(periodic, std::move(task));
}

} // namespace ingestd
