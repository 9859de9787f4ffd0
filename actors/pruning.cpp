// The pruning actor (see pruning.hpp).
//
//   tick ──a pass running──► nothing (its answer re-arms)
//        └─► pass ──answer: counted, logged──► more due? tick now : tick after the interval
//                 └─error (logged)───────────► tick after the interval
#include "actors/pruning.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/continuation.hpp"
#include "actors/metrics.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

using pruning_impl = with_continuations<pruning_actor>;

struct pruning_state {
  static inline const char* name = "ingestd.pruning";
  std::shared_ptr<retention_pass> pass;
  std::chrono::milliseconds interval{0};
  std::shared_ptr<worker_metrics> metrics;
  bool running = false;
};

using pruning_ptr = pruning_impl::stateful_pointer<pruning_state>;

void answered(pruning_ptr self, const result<prune_report>& r) {
  auto& st = self->state;
  st.running = false;
  if (!r) {
    log::warn("retention pass failed", {{"error", r.error().describe()}});
    self->delayed_send(self, st.interval, tick_atom_v);
    return;
  }
  if (st.metrics) {
    st.metrics->pruned_originals += r->originals;
    st.metrics->pruned_derived += r->derived;
    st.metrics->pruned_audit_rows += r->audit_rows;
    st.metrics->pruned_events += r->events;
  }
  if (r->originals + r->derived + r->audit_rows + r->events > 0)
    log::info("retention pruned", {{"originals", r->originals},
                                   {"derived_objects", r->derived},
                                   {"audit_rows", r->audit_rows},
                                   {"events", r->events}});
  if (r->more)
    self->send(self, tick_atom_v);
  else
    self->delayed_send(self, st.interval, tick_atom_v);
}

pruning_impl::behavior_type pruning(pruning_ptr self, std::shared_ptr<retention_pass> pass,
                                    std::chrono::milliseconds interval,
                                    std::shared_ptr<worker_metrics> metrics) {
  self->state.pass = std::move(pass);
  self->state.interval = interval;
  self->state.metrics = std::move(metrics);
  self->send(self, tick_atom_v);
  return {
      [self](tick_atom) {
        auto& st = self->state;
        if (st.running)
          return;
        st.running = true;
        st.pass->run(in_actor<prune_report>(
            self, [self](const result<prune_report>& r) { answered(self, r); }));
      },
      run_continuations(),
  };
}

} // namespace

pruning_actor spawn_pruning(caf::actor_system& sys, std::shared_ptr<retention_pass> pass,
                            std::chrono::milliseconds interval,
                            std::shared_ptr<worker_metrics> metrics) {
  return sys.spawn(pruning, std::move(pass), interval, std::move(metrics));
}

} // namespace ingestd
