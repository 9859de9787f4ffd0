// The sweeper actor. Every sweeper_interval: under the cluster-wide advisory lock (one node at a
// time), find `in-progress` ingestions that nobody holds and that truly have no queue message,
// mark them due now and send their ids to the queue again. A duplicate message is harmless (the
// claim lets one job through) but a backlog must not get one at every sweep: see the rescue
// statement in adapters/db/pg_repository.cpp for how "no message" is told.
//
//   tick (re-armed first) ──► queue stats ──visible or delayed messages: a backlog──► skip
//                                 │         └─error (logged)──────────────────────────► skip
//                                 └─none waiting──► rescue_stranded ──ids──► send ──► counted, logged
//                                                          └─none / lock held elsewhere / error (logged)
//
// Beside it, when the node serves the match stage, the same net for matching: pending documents
// whose message was not seen for longer than the longest back-off and that (Postgres queue) no
// message of the match queue names, e.g. a message given back as often as the redrive allows and
// dead-lettered before a delivery counted, are sent to the match queue again.
#include "actors/sweeper.hpp"

#include <algorithm>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/continuation.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

struct sweeper_state {
  static inline const char* name = "ingestd.sweeper";
  std::shared_ptr<worker_context> ctx;
  bool sweeping = false;
  /// The matching stage's sweep runs beside the ingestions' (each waits for its own calls).
  bool sweeping_matching = false;
};

using sweeper_ptr = sweeper_actor::stateful_pointer<sweeper_state>;

constexpr int batch_limit = 500;
/// Each port call of a sweep answers within two intervals (at least a minute), or counts as
/// failed: a lost answer must not leave the sweeper "sweeping" for ever.
std::chrono::milliseconds call_deadline(const worker_settings& s) {
  return std::max<std::chrono::milliseconds>(2 * s.sweeper_interval, std::chrono::minutes{1});
}

void enqueue(sweeper_ptr self, const std::vector<uuid>& ids) {
  auto& st = self->state;
  std::vector<outgoing_message> messages;
  messages.reserve(ids.size());
  for (const auto& id : ids)
    messages.push_back({id.str(), std::chrono::seconds{0}});
  auto count = static_cast<int64_t>(messages.size());
  st.ctx->ports.ingest_queue->send(
    std::move(messages),
    in_actor_within<std::vector<batch_entry_result>>(self, call_deadline(st.ctx->settings), "queue.send", [self, count](result<std::vector<batch_entry_result>> r) {
      auto& st = self->state;
      st.sweeping = false;
      if (!r) {
        // They stay due: the next sweep finds them again once the stale threshold has passed.
        log::warn("sweeper could not re-enqueue", {{"ingestions", count}, {"error", r.error().describe()}});
        return;
      }
      int64_t sent = 0;
      for (auto& e : *r)
        if (!e.failed)
          ++sent;
      st.ctx->metrics->rescues += sent;
      log::info("sweeper re-enqueued stranded ingestions", {{"ingestions", sent}, {"failed", count - sent}});
    }));
}

/// Longer than any invisibility the queue gives a message (a receive, a heartbeat extension), so
/// that a message that still exists has been seen within it; never shorter than the configured
/// stale threshold. The margin covers the queue's approximate counts and clock differences.
std::chrono::seconds stale_after(const worker_settings& s) {
  constexpr std::chrono::seconds margin{60};
  return std::max(s.stale_threshold, std::max(s.visibility_timeout, s.heartbeat_extension) + margin);
}

void rescue(sweeper_ptr self) {
  auto& st = self->state;
  st.ctx->ports.db->rescue_stranded(
    stale_after(st.ctx->settings), batch_limit,
    in_actor_within<std::vector<uuid>>(self, call_deadline(st.ctx->settings), "db.rescue_stranded", [self](result<std::vector<uuid>> r) {
      if (!r) {
        self->state.sweeping = false;
        log::warn("sweep failed", {{"error", r.error().describe()}});
        return;
      }
      if (r->empty()) {
        self->state.sweeping = false;
        return;
      }
      enqueue(self, *r);
    }));
}

/// A message waiting unreceived in the queue is one the database cannot see (SQS): while any
/// waits, an ingestion that looks stranded may be among them, so the sweep waits for the backlog.
void sweep(sweeper_ptr self) {
  auto& st = self->state;
  st.ctx->ports.ingest_queue->stats(in_actor_within<queue_stats>(self, call_deadline(st.ctx->settings), "queue.stats", [self](result<queue_stats> r) {
    if (!r) {
      self->state.sweeping = false;
      log::warn("sweep skipped: queue depth unknown", {{"error", r.error().describe()}});
      return;
    }
    if (r->visible + r->delayed > 0) {
      self->state.sweeping = false;
      log::debug("sweep skipped: messages wait in the queue", {{"visible", r->visible}, {"delayed", r->delayed}});
      return;
    }
    rescue(self);
  }));
}

// ---- the matching stage's net ----------------------------------------------------------------

/// The match stage this node serves, with its repository; null when it serves none.
const stage* match_stage(const sweeper_state& st) {
  if (!st.ctx->ports.matching)
    return nullptr;
  for (auto& s : st.ctx->stages)
    if (s->name == "match")
      return s.get();
  return nullptr;
}

/// Longer than any invisibility the queue gives a matching message: the longest back-off too.
std::chrono::seconds matching_stale_after(const worker_settings& s, const stage& match) {
  std::chrono::seconds longest{0};
  for (auto b : match.retry_backoff)
    longest = std::max(longest, b);
  return longest + stale_after(s);
}

void matching_sweep_done(sweeper_ptr self, const char* what, const error& err) {
  self->state.sweeping_matching = false;
  log::warn(what, {{"stage", "match"}, {"error", err.describe()}});
}

void rescue_matching(sweeper_ptr self, const stage& match) {
  auto& st = self->state;
  st.ctx->ports.matching->rescue_stranded(
    match.queue_name, matching_stale_after(st.ctx->settings, match), batch_limit,
    in_actor_within<std::vector<uuid>>(self, call_deadline(st.ctx->settings), "db.rescue_matching",
                                       [self, queue = match.queue](result<std::vector<uuid>> r) {
      if (!r)
        return matching_sweep_done(self, "matching sweep failed", r.error());
      if (r->empty()) {
        self->state.sweeping_matching = false;
        return;
      }
      std::vector<outgoing_message> messages;
      messages.reserve(r->size());
      for (const auto& id : *r)
        messages.push_back({id.str(), std::chrono::seconds{0}});
      auto count = static_cast<int64_t>(messages.size());
      queue->send(std::move(messages),
                  in_actor_within<std::vector<batch_entry_result>>(
                    self, call_deadline(self->state.ctx->settings), "queue.send",
                    [self, count](result<std::vector<batch_entry_result>> sent) {
        // Not sent: they stay pending and are found again once the threshold has passed.
        if (!sent)
          return matching_sweep_done(self, "sweeper could not re-enqueue matching jobs", sent.error());
        self->state.sweeping_matching = false;
        int64_t ok = 0;
        for (auto& e : *sent)
          if (!e.failed)
            ++ok;
        self->state.ctx->metrics->rescues += ok;
        log::info("sweeper re-enqueued stranded matching jobs", {{"documents", ok}, {"failed", count - ok}});
      }));
    }));
}

/// As the ingestions' sweep: not while messages wait in the match queue (SQS: they may be the
/// ones that look lost).
void sweep_matching(sweeper_ptr self, const stage& match) {
  auto& st = self->state;
  st.sweeping_matching = true;
  match.queue->stats(in_actor_within<queue_stats>(self, call_deadline(st.ctx->settings), "queue.stats",
                                                  [self, &match](result<queue_stats> r) {
    if (!r)
      return matching_sweep_done(self, "matching sweep skipped: queue depth unknown", r.error());
    if (r->visible + r->delayed > 0) {
      self->state.sweeping_matching = false;
      return;
    }
    rescue_matching(self, match);
  }));
}

sweeper_actor::behavior_type sweeper(sweeper_ptr self, std::shared_ptr<worker_context> ctx) {
  self->state.ctx = std::move(ctx);
  self->send(self, tick_atom_v);
  return {
    [self](tick_atom) {
      auto& st = self->state;
      self->delayed_send(self, st.ctx->settings.sweeper_interval, tick_atom_v);
      if (auto* match = match_stage(st); match != nullptr && !st.sweeping_matching)
        sweep_matching(self, *match);
      if (st.sweeping)
        return;
      st.sweeping = true;
      sweep(self);
    },
    [](resume_atom, uint64_t, continuation& c) { c.fn(); },
  };
}

} // namespace

sweeper_actor spawn_sweeper(caf::actor_system& sys, std::shared_ptr<worker_context> ctx) {
  return sys.spawn(sweeper, std::move(ctx));
}

} // namespace ingestd
