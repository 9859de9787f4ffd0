// The node registry actor.
//
//   tick (every interval; re-armed first) ──► refresh the row: in flight, jobs finished in the
//        last minute, running | draining ──► the row asks for a drain ──► flags.drain_requested
//        (once; the node's main thread then shuts down as on SIGTERM)
//   a refresh still waiting at the next tick (up to its deadline) ──► that tick is skipped (no
//        pile-up on a slow database); the row not found ──► warned once (another process took the
//        id over)
//   flush (at start, then every prune_interval) ──► delete rows not seen for the retention
#include "actors/node_registry.hpp"

#include <deque>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/continuation.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

using clock = std::chrono::steady_clock;

/// A refresh not answered within this counts as failed (the database's own statement timeout,
/// 30 s by default, normally answers first).
constexpr std::chrono::seconds refresh_deadline{60};

/// "Done in the last minute" is counted over this window.
constexpr std::chrono::seconds done_window{60};

using registry_impl = with_continuations<node_registry_actor>;

struct node_registry_state {
  static inline const char* name = "ingestd.node_registry";
  std::shared_ptr<node_repository> nodes;
  node_registry_settings settings;
  std::shared_ptr<worker_metrics> metrics;
  std::shared_ptr<const node_admission> admission;
  std::shared_ptr<node_drain_flags> flags;
  bool refreshing = false;
  bool warned_missing = false;
  /// (when, jobs finished so far): the oldest is the last sample at least a window old.
  std::deque<std::pair<clock::time_point, uint64_t>> samples;
};

using registry_ptr = registry_impl::stateful_pointer<node_registry_state>;

uint64_t jobs_finished(const worker_metrics& m) {
  return m.jobs("completed") + m.jobs("failed");
}

/// Jobs finished within the last window, from the samples. `now` is the actor system's clock
/// (the tests' virtual time).
int32_t done_last_minute(node_registry_state& st, clock::time_point now) {
  auto total = jobs_finished(*st.metrics);
  st.samples.emplace_back(now, total);
  while (st.samples.size() > 1 && st.samples[1].first <= now - done_window)
    st.samples.pop_front();
  return static_cast<int32_t>(total - st.samples.front().second);
}

void refresh(registry_ptr self) {
  auto& st = self->state;
  if (st.refreshing)
    return;
  st.refreshing = true;
  node_refresh row{st.settings.id,
                   st.settings.incarnation,
                   static_cast<int32_t>(st.admission->in_flight()),
                   done_last_minute(st, self->clock().now()),
                   st.flags->draining.load(),
                   st.admission->usage_ratio()};
  // Ticks skip while it waits (a slow database gets one refresh at a time, not a queue of
  // them); past the deadline it counts as failed and the next tick tries again.
  st.nodes->refresh(
      std::move(row),
      in_actor_within<node_refresh_answer>(
          self, refresh_deadline, "nodes.refresh", [self](result<node_refresh_answer> r) {
            auto& st = self->state;
            st.refreshing = false;
            if (!r) {
              log::warn("node registry refresh failed", {{"error", r.error().describe()}});
              return;
            }
            if (!r->found) {
              if (!st.warned_missing)
                log::warn("this node's registry row is gone or another process took its id over",
                          {{"worker_id", st.settings.id}});
              st.warned_missing = true;
              return;
            }
            if (r->drain_requested && !st.flags->drain_requested.exchange(true))
              log::info("drain requested through the node registry",
                        {{"worker_id", st.settings.id}});
          }));
}

void prune(registry_ptr self) {
  auto& st = self->state;
  st.nodes->prune(
      st.settings.retention,
      in_actor_within<int64_t>(
          self, std::chrono::seconds{60}, "nodes.prune", [](result<int64_t> r) {
            if (!r)
              log::warn("pruning the node registry failed", {{"error", r.error().describe()}});
            else if (*r > 0)
              log::info("pruned stopped and lost nodes from the registry", {{"rows", *r}});
          }));
}

registry_impl::behavior_type node_registry(registry_ptr self,
                                           std::shared_ptr<node_repository> nodes,
                                           node_registry_settings settings,
                                           std::shared_ptr<worker_metrics> metrics,
                                           std::shared_ptr<const node_admission> admission,
                                           std::shared_ptr<node_drain_flags> flags) {
  auto& st = self->state;
  st.nodes = std::move(nodes);
  st.settings = std::move(settings);
  st.metrics = std::move(metrics);
  st.admission = std::move(admission);
  st.flags = std::move(flags);
  st.samples.emplace_back(self->clock().now(), jobs_finished(*st.metrics));
  self->delayed_send(self, st.settings.interval, tick_atom_v);
  self->send(self, flush_atom_v);
  return {
      [self](tick_atom) {
        self->delayed_send(self, self->state.settings.interval, tick_atom_v);
        refresh(self);
      },
      [self](flush_atom) {
        self->delayed_send(self, self->state.settings.prune_interval, flush_atom_v);
        prune(self);
      },
      run_continuations(),
  };
}

} // namespace

node_registry_actor spawn_node_registry(caf::actor_system& sys,
                                        std::shared_ptr<node_repository> nodes,
                                        node_registry_settings settings,
                                        std::shared_ptr<worker_metrics> metrics,
                                        std::shared_ptr<const node_admission> admission,
                                        std::shared_ptr<node_drain_flags> flags) {
  return sys.spawn(node_registry, std::move(nodes), std::move(settings), std::move(metrics),
                   std::move(admission), std::move(flags));
}

} // namespace ingestd
