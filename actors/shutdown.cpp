// The shutdown coordinator.
//
//   running ──shutdown──► draining: every stage's poller stops after its current poll; jobs finish
//   draining ──drained (every poller)──► stopping: heartbeats, sweeper and CPU pool stop ──► done
//   draining ──grace period over, or a second shutdown──► forcing: every job releases its claim
//            and makes its message visible again, then quits ──drained──► stopping ──► done
#include "actors/shutdown.hpp"

#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

struct shutdown_state {
  static inline const char* name = "ingestd.shutdown";
  std::shared_ptr<node_context> ctx;
  std::vector<poller_actor> pollers;
  size_t drained = 0;
  std::vector<caf::actor> others;
  std::function<void()> done;
  bool draining = false;
  bool forcing = false;
};

using shutdown_ptr = shutdown_actor::stateful_pointer<shutdown_state>;

void force(shutdown_ptr self, const char* why) {
  auto& st = self->state;
  if (st.forcing)
    return;
  st.forcing = true;
  log::warn("releasing the jobs still running",
            {{"reason", why}, {"jobs_in_flight", st.ctx->admission->in_flight()}});
  for (auto& p : st.pollers)
    self->send(p, force_atom_v);
}

shutdown_actor::behavior_type shutdown(shutdown_ptr self, std::shared_ptr<node_context> ctx,
                                       std::vector<poller_actor> pollers,
                                       std::vector<caf::actor> others, std::function<void()> done) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.pollers = std::move(pollers);
  st.others = std::move(others);
  st.done = std::move(done);
  return {
      [self](shutdown_atom) {
        auto& st = self->state;
        if (st.draining)
          return force(self, "second shutdown request");
        st.draining = true;
        auto grace = st.ctx->settings.shutdown_grace;
        log::info("shutting down: draining jobs",
                  {{"grace_seconds", static_cast<int64_t>(grace.count())},
                   {"jobs_in_flight", st.ctx->admission->in_flight()}});
        for (auto& p : st.pollers)
          self->send(p, stop_atom_v, caf::actor_cast<caf::actor>(self));
        self->delayed_send(self, grace, timeout_atom_v, uint64_t{0});
      },
      [self](timeout_atom, uint64_t) { force(self, "grace period over"); },
      [self](drained_atom) {
        auto& st = self->state;
        if (++st.drained < st.pollers.size())
          return;
        log::info("drained: stopping the worker");
        for (auto& p : st.pollers)
          self->send_exit(p, caf::exit_reason::user_shutdown);
        for (auto& other : st.others)
          self->send_exit(other, caf::exit_reason::user_shutdown);
        if (st.done)
          st.done();
        self->quit();
      },
  };
}

} // namespace

shutdown_actor spawn_shutdown(caf::actor_system& sys, std::shared_ptr<node_context> ctx,
                              std::vector<poller_actor> pollers, std::vector<caf::actor> others,
                              std::function<void()> done) {
  return sys.spawn(shutdown, std::move(ctx), std::move(pollers), std::move(others),
                   std::move(done));
}

// -- watchdog --------------------------------------------------------------------------------

namespace {

/// Items named in the log line at most: enough to look them up, bounded for a node with
/// thousands of claims.
constexpr size_t max_named = 100;

/// The first max_named items, comma-separated.
template <class T, class Text>
std::string named(const std::vector<T>& items, Text text) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max_named; ++i)
    out.append(i == 0 ? "" : ", ").append(text(items[i]));
  return out;
}

} // namespace

shutdown_watchdog::~shutdown_watchdog() {
  {
    std::lock_guard guard{mtx_};
    disarmed_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

void shutdown_watchdog::arm(std::chrono::seconds after, std::shared_ptr<const node_context> ctx) {
  std::lock_guard guard{mtx_};
  if (thread_.joinable() || disarmed_)
    return;
  auto deadline = std::chrono::steady_clock::now() + after;
  thread_
      = std::thread{[this, deadline, after, ctx = std::move(ctx)] { watch(deadline, after, ctx); }};
}

void shutdown_watchdog::watch(std::chrono::steady_clock::time_point deadline,
                              std::chrono::seconds after,
                              const std::shared_ptr<const node_context>& ctx) {
  {
    std::unique_lock guard{mtx_};
    if (cv_.wait_until(guard, deadline, [this] { return disarmed_; }))
      return;
  }
  auto held = ctx->claims->ids();
  auto calls = calls_in_progress_ ? calls_in_progress_() : std::vector<std::string>{};
  log::error("shutdown did not finish in time: exiting without releasing what is still held",
             {{"deadline_seconds", static_cast<int64_t>(after.count())},
              {"stage", stage_.load()},
              {"jobs_in_flight", ctx->admission->in_flight()},
              {"claims_held", static_cast<int64_t>(held.size())},
              {"ingestion_ids", named(held, [](const uuid& id) { return id.str(); })},
              {"calls_in_progress", named(calls, [](const std::string& c) { return c; })}});
  // Destructors would join the threads that are stuck: leave at once (the log flushes per line).
  ::_exit(exit_code_);
}

} // namespace ingestd
