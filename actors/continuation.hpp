// How an actor receives the answer of a port call: the one private mechanism of actors/, never
// part of an interface in messages/protocol.hpp.
//
// A port (the queue, the database, storage, OCR, an HTTP provider) answers on its own thread. The
// callback made here turns the answer into a message to the actor that asked, carrying the rest
// of the work as a closure (a continuation), so that it runs inside the actor, with its state,
// like any handler. Each actor extends its public interface with the one handler for these
// messages (with_continuations<>); its handle, as others hold it, is the public interface. A
// sequence number lets an actor drop the answer of a step it has given up on (the job: a
// deadline, a stop or a lost claim made the step stale); the other actors pass 0 and run every
// continuation.
//
// CAF's request/response with .then() and a timeout is the same shape for messages between
// actors; ports are plain C++ (no CAF inside adapters), hence this bridge.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/send.hpp>

#include "messages/protocol.hpp"
#include "messages/result.hpp"

namespace ingestd {

/// The rest of the work of a port call, to run inside the actor that receives it (a local
/// message only, never serialised).
struct continuation {
  std::function<void()> fn;
};

/// An actor interface extended with the handler of its port calls' answers.
template <class Public>
using with_continuations =
    typename Public::template extend<caf::reacts_to<resume_atom, uint64_t, continuation>>;

/// The handler of actors whose continuations are never stale: runs each.
inline auto run_continuations() {
  return [](resume_atom, uint64_t, continuation& c) { c.fn(); };
}

/// Sends `fn` to run inside `to` as part of step `seq` (0: always current).
inline void post(const caf::actor& to, uint64_t seq, std::function<void()> fn) {
  caf::anon_send(to, resume_atom_v, seq, continuation{std::move(fn)});
}

/// A callback<T> that runs `next(result)` inside `self`.
template <class T, class Self, class Next>
callback<T> in_actor(Self* self, Next next) {
  auto me = caf::actor_cast<caf::actor>(self);
  return [me, next = std::move(next)](result<T> r) mutable {
    post(me, 0, [next, r = std::move(r)]() mutable { next(std::move(r)); });
  };
}

/// As in_actor, with a deadline, for the long-lived actors (poller, heartbeat, sweeper) whose
/// next call waits for this one: `next` runs exactly once, with the port's answer or, when none
/// came within `deadline`, with the transient error "<what>.timeout" (an answer after that is
/// dropped). The deadline is a delayed message to `self`.
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

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ingestd::continuation)
