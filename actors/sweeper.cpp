// The sweeper actor: the safety net for work items whose queue message is gone (a message
// dead-lettered while its item is still in progress, a queue purged by hand). Every
// sweeper_interval, for each stage the node serves: when the stage's queue holds no backlog, the
// work repository's revive gives a new message to that stage's items that nobody holds, that are
// past due and whose message was not seen for longer than any invisibility the queue gives one
// (the message and the mark in one transaction, one node of the cluster at a time). A duplicate
// message is harmless (the claim lets one job through), but a backlog must not get one at every
// sweep: while a queue reports visible or delayed messages its stage is not swept (a message
// waiting unreceived in SQS is one the database cannot see).
//
//   tick (re-armed first) ──► each stage not sweeping: queue stats
//        ──visible or delayed messages: a backlog──► skip
//        ──error (logged)──────────────────────────► skip
//        └─none waiting──► revive ──sent──► counted, logged
//                              └─none / the lock held elsewhere / error (logged)
#include "actors/sweeper.hpp"

#include <algorithm>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/continuation.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

using sweeper_impl = with_continuations<sweeper_actor>;

struct sweeper_state {
  static inline const char* name = "ingestd.sweeper";
  std::shared_ptr<node_context> ctx;
  /// The stages (by label) whose sweep is running: each waits for its own calls.
  std::set<std::string> sweeping;
};

using sweeper_ptr = sweeper_impl::stateful_pointer<sweeper_state>;

constexpr int batch_limit = 500;

/// Each port call of a sweep answers within two intervals (at least a minute), or counts as
/// failed: a lost answer must not leave a stage "sweeping" for ever.
std::chrono::milliseconds sweep_call_deadline(const node_settings& s) {
  return std::max<std::chrono::milliseconds>(2 * s.sweeper_interval, std::chrono::minutes{1});
}

/// Longer than any invisibility the queue gives a message (a receive, a heartbeat extension), so
/// that a message that still exists has been seen within it; never shorter than the configured
/// stale threshold. The margin covers the queue's approximate counts and clock differences. A
/// back-off is covered by the item's due time.
std::chrono::seconds stale_after(const node_settings& s) {
  constexpr std::chrono::seconds margin{60};
  return std::max(s.stale_threshold,
                  std::max(s.visibility_timeout, s.heartbeat_extension) + margin);
}

void sweep_done(sweeper_ptr self, const stage& s, const char* why = nullptr,
                const error* err = nullptr) {
  self->state.sweeping.erase(s.label);
  if (why != nullptr)
    log::warn(why,
              {{"stage", s.label}, {"error", err != nullptr ? err->describe() : std::string{}}});
}

void revive(sweeper_ptr self, const std::shared_ptr<const stage>& s) {
  auto& st = self->state;
  revive_request req{s->name, s->size_class, s->queue_name, stale_after(st.ctx->settings),
                     batch_limit};
  st.ctx->work->revive(
      std::move(req),
      in_actor_within<int64_t>(
          self, sweep_call_deadline(st.ctx->settings), "work.revive",
          [self, s](result<int64_t> sent) {
            if (!sent)
              return sweep_done(self, *s, "sweep failed", &sent.error());
            if (*sent > 0) {
              self->state.ctx->metrics->rescues += *sent;
              log::info("sweeper sent stranded work again",
                        {{"stage", s->label}, {"queue", s->queue_name}, {"sent", *sent}});
            }
            sweep_done(self, *s);
          }));
}

/// Sweeps one stage unless its queue holds a backlog.
void sweep(sweeper_ptr self, const std::shared_ptr<const stage>& s) {
  auto& st = self->state;
  if (!st.sweeping.insert(s->label).second)
    return;
  s->queue->stats(in_actor_within<queue_stats>(
      self, sweep_call_deadline(st.ctx->settings), "queue.stats", [self, s](result<queue_stats> r) {
        if (!r)
          return sweep_done(self, *s, "sweep skipped: queue depth unknown", &r.error());
        if (r->visible + r->delayed > 0) {
          log::debug("sweep skipped: messages wait in the queue", {{"stage", s->label},
                                                                   {"queue", s->queue->name()},
                                                                   {"visible", r->visible},
                                                                   {"delayed", r->delayed}});
          return sweep_done(self, *s);
        }
        revive(self, s);
      }));
}

sweeper_impl::behavior_type sweeper(sweeper_ptr self, std::shared_ptr<node_context> ctx) {
  self->state.ctx = std::move(ctx);
  self->send(self, tick_atom_v);
  return {
      [self](tick_atom) {
        auto& st = self->state;
        self->delayed_send(self, st.ctx->settings.sweeper_interval, tick_atom_v);
        for (auto& s : st.ctx->stages)
          sweep(self, s);
      },
      run_continuations(),
  };
}

} // namespace

sweeper_actor spawn_sweeper(caf::actor_system& sys, std::shared_ptr<node_context> ctx) {
  return sys.spawn(sweeper, std::move(ctx));
}

} // namespace ingestd
