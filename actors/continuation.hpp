// Port callbacks back into an actor: a port calls its callback on its own thread; this turns
// the call into a message so the continuation runs inside the actor, with the actor's state.
#pragma once

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

} // namespace ingestd
