// The heartbeat actor: batches visibility extensions and lease renewals for the claims it tracks.
//
//   track ──► fresh ──flush (≤1 s later, batched), if its receive visibility would leave less
//          than two heartbeats at the next tick (a short visibility, a slow claim)──► kept
//   kept ──tick (every heartbeat_rate)──► extend visibility to min(extension, 12 h left) and
//          renew leases, each in one batch; a refused entry, a lost lease or the 12-hour
//          visibility total ──► lost_atom to the job, dropped
//   kept ──tick, a cancel request for it (ingestd cancel while it runs; cancellable stages)──►
//          cancel_atom to the job, once; it stays tracked until the job untracks it
//   untrack ──► dropped
//   the job ends without untracking (it died) ──► dropped, so the lease expires and the next
//          claim counts the crash
//
// The tick re-arms itself first, so a slow batch never delays the schedule; lateness against
// the schedule is a metric. Each batch call has a deadline of one tick: an answer that does not
// come in time counts as a failed call (renewal: retried next tick; extension: retried next tick
// unless the message's visibility has run out).
#include "actors/heartbeat.hpp"

#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/continuation.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

using clock = std::chrono::steady_clock;

/// SQS refuses to keep a message invisible for longer than this in total per receive.
constexpr std::chrono::hours max_visibility_total{12};

using heartbeat_impl = with_continuations<heartbeat_actor>;

struct heartbeat_state {
  static inline const char* name = "ingestd.heartbeat";

  struct entry {
    tracked_claim claim;
    clock::time_point visible_until;
    bool fresh = true;
    /// The job was told that its work is cancelled.
    bool cancel_sent = false;
  };

  std::shared_ptr<node_context> ctx;
  std::unordered_map<uuid, entry, uuid_hash> tracked;
  /// The claim each monitored job was tracked for (an entry stays until the job's down message).
  std::unordered_map<caf::actor_addr, uuid> by_job;
  bool flush_pending = false;
  clock::time_point next_tick;
};

using heartbeat_ptr = heartbeat_impl::stateful_pointer<heartbeat_state>;

/// The fields of a log line about a tracked claim: those of its job's lines (actors/job.cpp).
std::vector<log::field> claim_fields(const heartbeat_state& st, const tracked_claim& c) {
  std::vector<log::field> f;
  f.emplace_back("worker_id", st.ctx->settings.worker_id);
  f.emplace_back("stage", c.stage->label);
  f.emplace_back("step", "heartbeat");
  if (c.stage->item_log_key != "document_id")
    f.emplace_back(c.stage->item_log_key, c.claim.item.str());
  f.emplace_back("document_id", c.document_id.is_nil() ? std::string{} : c.document_id.str());
  f.emplace_back("tenant_id", c.tenant_id.is_nil() ? std::string{} : c.tenant_id.str());
  return f;
}

/// Drops the claim tracked for `ref.item` and tells its job, if it is still the claim `ref` names:
/// an item is tracked again by its next attempt's claim (another token) as soon as the previous
/// attempt ends, so an answer about the previous claim may arrive when the new one is tracked.
void drop_as_lost(heartbeat_ptr self, claim_ref ref, const std::string& reason) {
  auto& st = self->state;
  auto id = ref.item;
  auto i = st.tracked.find(id);
  if (i == st.tracked.end() || i->second.claim.claim.token != ref.token)
    return;
  // Debug only: the job says at warn when it stops for it ("job finished", status lost). A renewal
  // that runs just after a job's completion committed reports its item as lost too, which the
  // job, already storing its outcome, ignores: under load that was dozens of false warnings.
  log::write_with(log::level::debug, "claim lost", claim_fields(st, i->second.claim),
                  {{"reason", reason}});
  self->send(caf::actor_cast<job_actor>(i->second.claim.job), lost_atom_v, reason);
  st.tracked.erase(i);
  st.ctx->metrics->tracked_claims--;
  st.ctx->claims->remove(id);
}

/// Each batch call answers before the next tick sends the next one, or counts as failed (the
/// continuation then runs with "<call>.timeout"): a lost answer must not leave claims unanswered.
std::chrono::milliseconds beat_call_deadline(const node_settings& s) {
  return std::max<std::chrono::milliseconds>(s.heartbeat_rate, std::chrono::seconds{1});
}

void extend_on(heartbeat_ptr self, queue& q, const std::vector<uuid>& ids);

/// Extends the visibility of the given claims in one batch call per queue.
void extend(heartbeat_ptr self, const std::vector<uuid>& ids) {
  auto& st = self->state;
  std::unordered_map<queue*, std::vector<uuid>> by_queue;
  for (auto& id : ids)
    if (auto i = st.tracked.find(id); i != st.tracked.end())
      by_queue[i->second.claim.stage->queue.get()].push_back(id);
  for (auto& [q, group] : by_queue)
    extend_on(self, *q, group);
}

void extend_on(heartbeat_ptr self, queue& q, const std::vector<uuid>& ids) {
  auto& st = self->state;
  auto now = clock::now();
  std::vector<visibility_change> changes;
  std::unordered_map<std::string, claim_ref> by_receipt;
  std::vector<std::pair<claim_ref, clock::time_point>> planned;
  for (auto& id : ids) {
    auto i = st.tracked.find(id);
    if (i == st.tracked.end())
      continue;
    auto& e = i->second;
    auto left = std::chrono::duration_cast<std::chrono::seconds>(max_visibility_total
                                                                 - (now - e.claim.received_at));
    auto timeout = std::min(st.ctx->settings.heartbeat_extension, left);
    if (timeout <= st.ctx->settings.heartbeat_rate) {
      drop_as_lost(self, e.claim.claim, "the queue's 12-hour visibility limit is reached");
      continue;
    }
    e.fresh = false;
    changes.push_back({e.claim.receipt, timeout});
    by_receipt.emplace(e.claim.receipt, e.claim.claim);
    planned.emplace_back(e.claim.claim, now + timeout);
  }
  if (changes.empty())
    return;
  q.change_visibility(
      std::move(changes),
      in_actor_within<std::vector<batch_entry_result>>(
          self, beat_call_deadline(st.ctx->settings), "queue.change_visibility",
          [self, by_receipt, planned](result<std::vector<batch_entry_result>> r) {
            auto& st = self->state;
            if (!r) {
              // Nothing changed, or no answer in time: try again next tick; claims whose
              // visibility ran out are lost.
              log::warn("visibility extension failed",
                        {{"error", r.error().describe()},
                         {"claims", static_cast<int64_t>(planned.size())}});
              auto now = clock::now();
              for (auto& [ref, until] : planned) {
                auto i = st.tracked.find(ref.item);
                if (i != st.tracked.end() && i->second.visible_until <= now)
                  drop_as_lost(self, ref, "message visibility expired: " + r.error().describe());
              }
              return;
            }
            for (auto& entry : *r) {
              auto j = by_receipt.find(entry.ref);
              if (j != by_receipt.end() && entry.failed)
                drop_as_lost(self, j->second,
                             "visibility extension refused: " + entry.error.describe());
            }
            for (auto& [ref, until] : planned)
              if (auto i = st.tracked.find(ref.item);
                  i != st.tracked.end() && i->second.claim.claim.token == ref.token)
                i->second.visible_until = until;
          }));
}

/// Renews the leases of every tracked claim, of every stage, in one call.
void renew(heartbeat_ptr self) {
  auto& st = self->state;
  if (st.tracked.empty())
    return;
  std::vector<claim_ref> refs;
  refs.reserve(st.tracked.size());
  for (auto& [id, e] : st.tracked)
    refs.push_back(e.claim.claim);
  auto done = in_actor_within<std::vector<claim_ref>>(
      self, beat_call_deadline(st.ctx->settings), "work.renew_leases",
      [self](result<std::vector<claim_ref>> r) {
        if (!r) {
          // Failed or no answer in time (a lost callback): the leases stay as they were and the
          // next tick renews them again; only the database's answer drops a claim as lost.
          log::warn("lease renewal failed", {{"error", r.error().describe()}});
          return;
        }
        for (auto& ref : *r)
          drop_as_lost(self, ref, "lease lost: the claim was taken over");
      });
  st.ctx->work->renew_leases(std::move(refs), st.ctx->settings.lease, std::move(done));
}

/// Asks which tracked claims of cancellable stages were cancelled, and tells their jobs: they
/// stop at their next step boundary. A failed look-up is retried next tick.
void check_cancels(heartbeat_ptr self) {
  auto& st = self->state;
  std::vector<uuid> ids;
  for (auto& [id, e] : st.tracked)
    if (!e.cancel_sent && e.claim.stage->cancellable)
      ids.push_back(id);
  if (ids.empty())
    return;
  auto done = in_actor_within<std::vector<uuid>>(
      self, beat_call_deadline(st.ctx->settings), "work.cancel_requests",
      [self](result<std::vector<uuid>> r) {
        if (!r) {
          log::warn("cancel look-up failed", {{"error", r.error().describe()}});
          return;
        }
        auto& st = self->state;
        for (auto& id : *r) {
          auto i = st.tracked.find(id);
          if (i == st.tracked.end() || i->second.cancel_sent)
            continue;
          i->second.cancel_sent = true;
          log::write_with(log::level::info, "cancel requested; the job stops at its next step",
                          claim_fields(st, i->second.claim));
          self->send(caf::actor_cast<job_actor>(i->second.claim.job), cancel_atom_v);
        }
      });
  st.ctx->work->cancel_requests(std::move(ids), std::move(done));
}

heartbeat_impl::behavior_type heartbeat(heartbeat_ptr self, std::shared_ptr<node_context> ctx) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.next_tick = clock::now() + st.ctx->settings.heartbeat_rate;
  self->delayed_send(self, st.ctx->settings.heartbeat_rate, tick_atom_v);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    auto j = st.by_job.find(down.source);
    if (j == st.by_job.end())
      return;
    auto id = j->second;
    st.by_job.erase(j);
    auto i = st.tracked.find(id);
    if (i == st.tracked.end() || i->second.claim.job.address() != down.source)
      return; // untracked as it should be, or tracked again by another job
    log::write_with(log::level::warn,
                    "a job ended without giving up its claim; its lease is left to expire",
                    claim_fields(st, i->second.claim));
    st.tracked.erase(i);
    st.ctx->metrics->tracked_claims--;
    st.ctx->claims->remove(id);
  });
  return {
      [self](track_atom, tracked_claim& claim) {
        auto& st = self->state;
        auto id = claim.claim.item;
        if (claim.job && st.by_job.emplace(claim.job.address(), id).second)
          self->monitor(claim.job);
        auto until = claim.received_at + st.ctx->settings.visibility_timeout;
        if (st.tracked.insert_or_assign(id, heartbeat_state::entry{std::move(claim), until, true})
                .second) {
          st.ctx->metrics->tracked_claims++;
          st.ctx->claims->add(id);
        }
        if (!st.flush_pending) {
          st.flush_pending = true;
          self->delayed_send(self, std::chrono::seconds{1}, flush_atom_v);
        }
      },
      [self](untrack_atom, uuid& id) {
        if (self->state.tracked.erase(id) > 0) {
          self->state.ctx->metrics->tracked_claims--;
          self->state.ctx->claims->remove(id);
        }
      },
      [self](flush_atom) {
        auto& st = self->state;
        st.flush_pending = false;
        // Only claims whose receive visibility would leave less than two heartbeats at the next
        // tick (a slow claim, a short visibility): the others wait for the tick, so a job that
        // ends before it costs no extension.
        auto soon = clock::now() + 3 * st.ctx->settings.heartbeat_rate;
        std::vector<uuid> fresh;
        for (auto& [id, e] : st.tracked)
          if (e.fresh && e.visible_until < soon)
            fresh.push_back(id);
        extend(self, fresh);
      },
      [self](tick_atom) {
        auto& st = self->state;
        auto now = clock::now();
        self->delayed_send(self, st.ctx->settings.heartbeat_rate, tick_atom_v);
        auto late = std::chrono::duration<double>(now - st.next_tick).count();
        st.ctx->metrics->heartbeat_lateness(std::max(late, 0.0));
        st.next_tick = now + st.ctx->settings.heartbeat_rate;
        std::vector<uuid> all;
        all.reserve(st.tracked.size());
        for (auto& [id, e] : st.tracked)
          all.push_back(id);
        extend(self, all);
        renew(self);
        check_cancels(self);
      },
      run_continuations(),
  };
}

} // namespace

heartbeat_actor spawn_heartbeat(caf::actor_system& sys, std::shared_ptr<node_context> ctx) {
  return sys.spawn(heartbeat, std::move(ctx));
}

} // namespace ingestd
