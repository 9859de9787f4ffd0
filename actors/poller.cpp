// The poller actor: one per stage a node serves.
//
//   idle ──poll (room for jobs)──► receiving ──messages──► spawn a job each ──► idle ──► poll
//     ▲                                │
//     │                                └─error──► backoff (exponential with jitter, logged
//     │                                           once per streak) ──► poll
//     │     (a receive unanswered past its long poll + 30 s is an error)
//     ├── full (the stage's max_in_flight jobs): no receive until a job ends (backpressure)
//     ├── the node full (worker.max_in_flight jobs of all stages): look again in a second
//     └── (stages that use the CPU pool) CPU pool saturated (its backlog needs more than half the OCR deadline): no receive,
//         look again in a second
//   stop ──► no new receive; the current one finishes and its messages still run; when no job
//            is left: drained_atom to the listener
//   force ──► stop_atom to every job (they give their work back); messages of a receive still
//             in progress are made visible again when it returns
#include "actors/poller.hpp"

#include <cmath>
#include <random>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/continuation.hpp"
#include "actors/ingest_job.hpp"
#include "actors/job.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

struct poller_state {
  static inline const char* name = "ingestd.poller";

  std::shared_ptr<worker_context> ctx;
  std::shared_ptr<const ingestd::stage> stage;
  std::vector<heartbeat_actor> heartbeats;
  size_t next_heartbeat = 0;
  std::unordered_map<caf::actor_addr, job_actor> jobs;
  bool receiving = false;
  bool backing_off = false;
  bool stopping = false;
  bool forced = false;
  caf::actor stop_listener;
  int error_streak = 0;
  std::mt19937 rng{std::random_device{}()};
};

using poller_ptr = poller_actor::stateful_pointer<poller_state>;

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

void received(poller_ptr self, result<std::vector<queue_message>> r) {
  auto& st = self->state;
  st.receiving = false;
  if (!r) {
    st.ctx->metrics->queue_receive_errors++;
    if (st.error_streak++ == 0)
      log::warn("queue receive failed; backing off", {{"stage", st.stage->name},
                                                      {"queue", st.stage->queue->name()},
                                                      {"error", r.error().describe()}});
    // Exponential backoff from 0.5 s up to 30 s, with ±50 % jitter.
    auto base = std::min(30'000.0, 500.0 * std::pow(2.0, std::min(st.error_streak - 1, 10)));
    auto wait = std::chrono::milliseconds{static_cast<int64_t>(
      base * std::uniform_real_distribution<double>{0.5, 1.5}(st.rng))};
    st.backing_off = true;
    self->delayed_send(self, wait, poll_atom_v);
    return check_drained(self);
  }
  if (st.error_streak > 0) {
    log::info("queue receive recovered", {{"failed_attempts", st.error_streak}});
    st.error_streak = 0;
  }
  if (st.forced && !r->empty()) {
    // Received while the worker gives its work back: make them visible again at once.
    std::vector<visibility_change> back;
    for (auto& msg : *r)
      back.push_back({msg.receipt, std::chrono::seconds{0}});
    st.stage->queue->change_visibility(std::move(back), [](auto) {});
    return check_drained(self);
  }
  for (auto& msg : *r) {
    auto hb = st.heartbeats[st.next_heartbeat++ % st.heartbeats.size()];
    auto job = spawn_job(self->system(), st.ctx, st.stage, hb, std::move(msg));
    self->monitor(job);
    st.jobs.emplace(job->address(), job);
  }
  poll_queue(self);
  check_drained(self);
}

/// The CPU pool's backlog would take more than half the OCR deadline to work off: a document
/// admitted now would wait for a worker past its deadline and only be given back.
bool cpu_saturated(const poller_state& st) {
  auto& m = *st.ctx->metrics;
  auto backlog = m.cpu_backlog.load();
  auto item_us = m.cpu_item_us.load();
  if (backlog <= 0 || item_us <= 0)
    return false;
  auto wait_us = backlog * item_us / std::max(st.ctx->settings.cpu_workers, 1);
  return wait_us > std::chrono::duration_cast<std::chrono::microseconds>(st.ctx->settings.cpu_deadline).count() / 2;
}

void poll_queue(poller_ptr self) {
  auto& st = self->state;
  auto limit = st.stage->max_in_flight > 0 ? st.stage->max_in_flight : st.ctx->settings.max_in_flight;
  auto room = limit - static_cast<int>(st.jobs.size());
  if (st.stopping || st.receiving || st.backing_off || room <= 0)
    return;
  // The node-wide limit counts every stage's jobs; another stage's job that ends does not wake
  // this poller, so it looks again in a second.
  auto node_room = st.ctx->settings.max_in_flight - static_cast<int>(st.ctx->metrics->in_flight.load());
  if (node_room <= 0) {
    st.backing_off = true;
    self->delayed_send(self, std::chrono::seconds{1}, poll_atom_v);
    return;
  }
  room = std::min(room, node_room);
  if (st.stage->uses_cpu && cpu_saturated(st)) {
    // Admission by what the CPU pool can finish: look again in a second.
    st.ctx->metrics->cpu_admission_waits++;
    st.backing_off = true;
    self->delayed_send(self, std::chrono::seconds{1}, poll_atom_v);
    return;
  }
  st.receiving = true;
  auto& s = st.ctx->settings;
  // A receive that never answers would stop this node for good: past the long poll and a margin
  // it counts as failed (messages it may still bring are dropped and reappear after their
  // visibility timeout).
  auto deadline = std::chrono::duration_cast<std::chrono::milliseconds>(s.wait_time + receive_margin);
  st.stage->queue->receive(
    std::min(s.max_messages, room), s.wait_time, s.visibility_timeout,
    in_actor_within<std::vector<queue_message>>(self, deadline, "queue.receive",
                                                [self](auto r) { received(self, std::move(r)); }));
}

poller_actor::behavior_type poller(poller_ptr self, std::shared_ptr<worker_context> ctx,
                                   std::shared_ptr<const stage> stage,
                                   std::vector<heartbeat_actor> heartbeats) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.stage = std::move(stage);
  st.heartbeats = std::move(heartbeats);
  self->set_down_handler([self](caf::down_msg& down) {
    self->state.jobs.erase(down.source);
    poll_queue(self);
    check_drained(self);
  });
  self->send(self, poll_atom_v);
  return {
    [self](poll_atom) {
      self->state.backing_off = false;
      poll_queue(self);
    },
    [](resume_atom, uint64_t, continuation& c) { c.fn(); },
    [self](stop_atom, caf::actor& listener) {
      auto& st = self->state;
      log::info("poller stopping", {{"stage", st.stage->name},
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
    [self](status_atom) { return static_cast<int32_t>(self->state.jobs.size()); },
  };
}

} // namespace

poller_actor spawn_poller(caf::actor_system& sys, std::shared_ptr<worker_context> ctx,
                          std::shared_ptr<const stage> stage, std::vector<heartbeat_actor> heartbeats) {
  return sys.spawn(poller, std::move(ctx), std::move(stage), std::move(heartbeats));
}

poller_actor spawn_poller(caf::actor_system& sys, std::shared_ptr<worker_context> ctx,
                          std::vector<heartbeat_actor> heartbeats) {
  std::shared_ptr<const stage> ingest = make_ingest_stage(*ctx);
  return spawn_poller(sys, std::move(ctx), std::move(ingest), std::move(heartbeats));
}

} // namespace ingestd
