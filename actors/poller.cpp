// The poller actor: one per stage a node serves.
//
//   idle ──poll (room for jobs)──► receiving ──messages──► spawn a job each ──► idle ──► poll
//     ▲                                │
//     │                                └─error──► backoff (exponential with jitter, logged
//     │                                           once per streak) ──► poll
//     │     (a receive unanswered past its long poll + 30 s is an error)
//     ├── full (the stage's max_in_flight jobs): no receive until a job ends (backpressure)
//     ├── the node full (worker.max_in_flight jobs of all stages): look again in a second
//     ├── jobs gave their work back because the database did not answer them (node_admission):
//     │   rest (0.5 s, doubling to 5 s) at each new such give-back, otherwise receive one message
//     │   at a time, until a job's outcome reaches the database
//     ├── no free weighted slot (worker.capacity_slots, shared by the stages; a job of the stage's
//     │   weight fits, or the node is idle for one heavier than the whole budget): look again in
//     │   a second (or when one of its jobs ends). A receive asks only for what fits now and
//     │   holds no slot while it waits; each message takes its slots when it arrives, and one
//     │   whose slots another stage took meanwhile is made visible again at once
//     ├── worker.lifetime_units admitted, or worker.exit_after_idle_polls empty receives in a row
//     │   with nothing running: ask the node to drain (request_drain) ──► stop, as below
//     └── (stages that use the CPU pool) CPU pool saturated (its backlog needs more than half the
//         OCR deadline): no receive, look again in a second
//   stop ──► no new receive; the current one finishes and its messages still run; when no job
//            is left: drained_atom to the listener
//   force ──► stop_atom to every job (they give their work back); messages of a receive still
//             in progress are made visible again when it returns
#include "actors/poller.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <unordered_map>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/continuation.hpp"
#include "actors/job.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

using poller_impl = with_continuations<poller_actor>;

struct poller_state {
  static inline const char* name = "ingestd.poller";

  std::shared_ptr<node_context> ctx;
  std::shared_ptr<const ingestd::stage> stage;
  std::vector<heartbeat_actor> heartbeats;
  size_t next_heartbeat = 0;
  std::unordered_map<caf::actor_addr, job_actor> jobs;
  /// When each job started: its slots are freed and its slot-time counted when it ends.
  std::unordered_map<caf::actor_addr, std::chrono::steady_clock::time_point> job_started;
  /// This poller asked the node to drain (logged once).
  bool drain_asked = false;
  /// A look in a second for free slots is armed (a job of this stage that ends looks at once).
  bool slot_timer = false;
  bool receiving = false;
  bool backing_off = false;
  bool stopping = false;
  bool forced = false;
  /// The node's database failures in a row (node_admission) this poller last rested for.
  int64_t rested_for = 0;
  caf::actor stop_listener;
  int error_streak = 0;
  std::mt19937 rng{std::random_device{}()};
};

using poller_ptr = poller_impl::stateful_pointer<poller_state>;

/// How long a receive may take beyond its long poll before it counts as failed.
constexpr std::chrono::seconds receive_margin{30};

void check_drained(poller_ptr self) {
  auto& st = self->state;
  if (st.stopping && !st.receiving && st.jobs.empty() && st.stop_listener) {
    log::info("poller drained: no job left");
    caf::anon_send(st.stop_listener, drained_atom_v);
    st.stop_listener = nullptr;
  }
}

void poll_queue(poller_ptr self);

// ---- capacity and lifetime ------------------------------------------------------------------

/// A job ended: its slots are free again, and its slot-time is counted.
void job_ended(poller_state& st, const caf::actor_addr& job) {
  auto i = st.job_started.find(job);
  if (i == st.job_started.end())
    return;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now()
                                                                  - i->second);
  st.ctx->admission->release(st.stage->weight, ms);
  st.job_started.erase(i);
}

/// Asks the node to drain, once per node (every poller may see the limit).
void drain_node(poller_state& st, const std::string& why) {
  if (std::exchange(st.drain_asked, true))
    return;
  auto& a = *st.ctx->admission;
  log::info("draining the node", {{"stage", st.stage->label},
                                  {"reason", why},
                                  {"units_admitted", a.units_admitted()},
                                  {"lifetime_units", st.ctx->settings.lifetime_units},
                                  {"capacity_slots", st.ctx->settings.capacity_slots},
                                  {"peak_slots_in_use", a.peak_slots_in_use()}});
  if (st.ctx->request_drain)
    st.ctx->request_drain(why);
}

void received(poller_ptr self, result<std::vector<queue_message>> r) {
  auto& st = self->state;
  st.receiving = false;
  if (!r) {
    st.ctx->metrics->queue_receive_errors++;
    if (st.error_streak++ == 0)
      log::warn("queue receive failed; backing off", {{"stage", st.stage->label},
                                                      {"queue", st.stage->queue->name()},
                                                      {"error", r.error().describe()}});
    // Exponential backoff from 0.5 s up to 30 s, with ±50 % jitter.
    auto base = std::min(30'000.0, 500.0 * std::pow(2.0, std::min(st.error_streak - 1, 10)));
    auto wait = std::chrono::milliseconds{
        static_cast<int64_t>(base * std::uniform_real_distribution<double>{0.5, 1.5}(st.rng))};
    st.backing_off = true;
    self->delayed_send(self, wait, poll_atom_v);
    return check_drained(self);
  }
  if (st.error_streak > 0) {
    log::info("queue receive recovered", {{"failed_attempts", st.error_streak}});
    st.error_streak = 0;
  }
  auto& admission = *st.ctx->admission;
  if (r->empty()) {
    auto idle = admission.idle_receive();
    auto limit = st.ctx->settings.exit_after_idle_polls;
    if (limit > 0 && idle >= limit && admission.in_flight() == 0 && !st.stopping)
      drain_node(st, "worker.exit_after_idle_polls: " + std::to_string(idle)
                         + " empty receives in a row");
  } else {
    admission.busy_receive();
  }
  if (st.forced && !r->empty()) {
    // Received while the worker gives its work back: make them visible again at once.
    std::vector<visibility_change> back;
    for (auto& msg : *r)
      back.push_back({msg.receipt, std::chrono::seconds{0}});
    st.stage->queue->change_visibility(std::move(back), [](auto) {});
    return check_drained(self);
  }
  std::vector<visibility_change> no_room;
  for (auto& msg : *r) {
    if (!admission.admit(st.stage->weight)) {
      // Another stage took the slots meanwhile, or the lifetime ran out: visible again at once.
      no_room.push_back({msg.receipt, std::chrono::seconds{0}});
      continue;
    }
    auto hb = st.heartbeats[st.next_heartbeat++ % st.heartbeats.size()];
    auto job = spawn_job(self->system(), st.ctx, st.stage, hb, std::move(msg));
    self->monitor(job);
    st.job_started.emplace(job->address(), std::chrono::steady_clock::now());
    st.jobs.emplace(job->address(), job);
  }
  if (!no_room.empty()) {
    st.ctx->metrics->admission_give_backs += static_cast<int64_t>(no_room.size());
    st.stage->queue->change_visibility(std::move(no_room), [](auto) {});
  }
  poll_queue(self);
  check_drained(self);
}

void poll_queue(poller_ptr self) {
  auto& st = self->state;
  auto limit
      = st.stage->max_in_flight > 0 ? st.stage->max_in_flight : st.ctx->settings.max_in_flight;
  auto room = limit - static_cast<int>(st.jobs.size());
  if (st.stopping || st.receiving || st.backing_off || room <= 0)
    return;
  // The node-wide limit counts every stage's jobs; another stage's job that ends does not wake
  // this poller, so it looks again in a second.
  auto& admission = *st.ctx->admission;
  auto node_room = static_cast<int>(admission.room_in_flight());
  if (node_room <= 0) {
    st.backing_off = true;
    self->delayed_send(self, std::chrono::seconds{1}, poll_atom_v);
    return;
  }
  room = std::min(room, node_room);
  if (auto failures = admission.database_failures(); failures == 0) {
    st.rested_for = 0;
  } else if (failures != st.rested_for) {
    // Jobs gave their work back because the database did not answer: rest (0.5 s, doubling up
    // to 5 s, the connections' own reconnect back-off) before the next receive.
    if (st.rested_for == 0)
      log::warn("the database did not answer a job: resting, then one message at a time",
                {{"stage", st.stage->label}});
    st.rested_for = failures;
    st.backing_off = true;
    auto rest = std::chrono::milliseconds{500} * (int64_t{1} << std::min<int64_t>(failures - 1, 4));
    self->delayed_send(self, std::min<std::chrono::milliseconds>(rest, std::chrono::seconds{5}),
                       poll_atom_v);
    return;
  } else if (!st.jobs.empty()) {
    return; // one message at a time: the job that ends looks again
  } else {
    room = 1;
  }
  if (st.stage->uses_cpu && admission.cpu_saturated()) {
    // Admission by what the CPU pool can finish: look again in a second.
    st.ctx->metrics->cpu_admission_waits++;
    st.backing_off = true;
    self->delayed_send(self, std::chrono::seconds{1}, poll_atom_v);
    return;
  }
  auto& s = st.ctx->settings;
  auto left = admission.jobs_left_in_lifetime(st.stage->weight);
  if (left <= 0) {
    // worker.lifetime_units admitted: the node drains and exits (the coordinator stops us).
    drain_node(st, "worker.lifetime_units reached");
    return;
  }
  auto fit = admission.jobs_that_fit(st.stage->weight);
  if (fit <= 0) {
    // No free slot: one of this stage's jobs that ends wakes us; another stage's does not.
    if (!std::exchange(st.slot_timer, true))
      self->delayed_send(self, std::chrono::seconds{1}, poll_atom_v);
    return;
  }
  room = static_cast<int>(std::min<int64_t>({room, s.max_messages, fit, left}));
  st.receiving = true;
  // A receive that never answers would stop this node for good: past the long poll and a margin
  // it counts as failed (messages it may still bring are dropped and reappear after their
  // visibility timeout).
  auto deadline
      = std::chrono::duration_cast<std::chrono::milliseconds>(s.wait_time + receive_margin);
  st.stage->queue->receive(
      room, s.wait_time, s.visibility_timeout,
      in_actor_within<std::vector<queue_message>>(
          self, deadline, "queue.receive", [self](auto r) { received(self, std::move(r)); }));
}

poller_impl::behavior_type poller(poller_ptr self, std::shared_ptr<node_context> ctx,
                                  std::shared_ptr<const stage> stage,
                                  std::vector<heartbeat_actor> heartbeats) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.stage = std::move(stage);
  st.heartbeats = std::move(heartbeats);
  self->set_down_handler([self](caf::down_msg& down) {
    job_ended(self->state, down.source);
    self->state.jobs.erase(down.source);
    poll_queue(self);
    check_drained(self);
  });
  self->send(self, poll_atom_v);
  return {
      [self](poll_atom) {
        self->state.backing_off = false;
        self->state.slot_timer = false;
        poll_queue(self);
      },
      run_continuations(),
      [self](stop_atom, caf::actor& listener) {
        auto& st = self->state;
        log::info("poller stopping", {{"stage", st.stage->label},
                                      {"jobs_in_flight", static_cast<int64_t>(st.jobs.size())},
                                      {"receive_in_progress", st.receiving ? "yes" : "no"}});
        st.stopping = true;
        st.stop_listener = std::move(listener);
        check_drained(self);
      },
      [self](force_atom) {
        self->state.forced = true;
        for (auto& [addr, job] : self->state.jobs)
          self->send(job, stop_atom_v);
      },
  };
}

} // namespace

poller_actor spawn_poller(caf::actor_system& sys, std::shared_ptr<node_context> ctx,
                          std::shared_ptr<const stage> stage,
                          std::vector<heartbeat_actor> heartbeats) {
  return sys.spawn(poller, std::move(ctx), std::move(stage), std::move(heartbeats));
}

} // namespace ingestd
