// Port callbacks back into an actor: a port calls its callback on its own thread; this turns
// the call into a message so the continuation runs inside the actor, with the actor's state.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "messages/protocol.hpp"
#include "messages/result.hpp"

namespace ingestd {

/// A callback<T> that runs `next(result)` inside `self` (sequence number 0: always current).
template <class T, class Self, class Next>
callback<T> in_actor(Self* self, Next next) {
  auto me = caf::actor_cast<caf::actor>(self);
  return [me, next = std::move(next)](result<T> r) mutable {
    caf::anon_send(me, resume_atom_v, uint64_t{0},
                   continuation{[next, r = std::move(r)]() mutable { next(std::move(r)); }});
  };
}

/// As in_actor, with a deadline, for the long-lived actors (poller, sweeper) whose next call
/// waits for this one: `next` runs exactly once, with the port's answer or, when none came within
/// `deadline`, with the transient error "<what>.timeout" (an answer after that is dropped). The
/// deadline is a delayed message to `self`, which must handle (resume_atom, uint64_t, continuation).
template <class T, class Self, class Next>
callback<T> in_actor_within(Self* self, std::chrono::milliseconds deadline, const std::string& what,
                            Next next) {
  // Both only touched inside the actor.
  auto answered = std::make_shared<bool>(false);
  auto shared_next = std::make_shared<Next>(std::move(next));
  auto secs = std::to_string(std::chrono::duration_cast<std::chrono::seconds>(deadline).count());
  self->delayed_send(self, deadline, resume_atom_v, uint64_t{0},
                     continuation{[answered, shared_next, what, secs] {
                       if (*answered)
                         return;
                       *answered = true;
                       (*shared_next)(result<T>{error::make_transient(
                         what + ".timeout", what + " did not answer within " + secs + " s")});
                     }});
  return in_actor<T>(self, [answered, shared_next](result<T> r) {
    if (*answered)
      return;
    *answered = true;
    (*shared_next)(std::move(r));
  });
}

} // namespace ingestd
