// The relay actor.
//
//   tick ──► take (a batch, held from other relays) ──► send per queue (batches of 10)
//              │                                          ├─sent──► mark_sent
//              │                                          └─refused / unknown queue / error
//              │                                               ──► mark_failed (tried again next
//              time) └─error (logged) ──► tick after the interval
//   all answered ──► a full batch: tick at once; fewer: after the interval
//   prune (every prune_interval) ──► delete rows sent longer ago than the retention
//
// Event rows (destination "events:<sink>") go to their sink one document at a time: a chain per
// ordering key delivers the key's rows in id order, each after the previous one was accepted;
// the first failure marks that row failed and backs the sink off, and the rest of the chain is
// left untried, so nothing later of that document overtakes it. The take locks the key for this
// relay until its next take, so no other node's relay sends the document's events meanwhile.
// Chains of different documents run side by side. A row that fails settings.max_attempts times
// is dead (logged; `ingestd events --dead`, `ingestd events redeliver`), and its document's later
// events go on without it.
// A sink in its back-off is left out of the take: its rows wait in the outbox, and ingestion,
// which only writes them, never waits for a receiver.
//
// At least once: a crash between a send and its mark sends the row again, so the consumer (the
// next stage's claim) must tolerate duplicates, and does.
#include "actors/relay.hpp"

#include <algorithm>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/continuation.hpp"
#include "actors/metrics.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

/// A sink's back-off after failures in a row.
struct sink_backoff {
  int failures = 0;
  caf::actor_clock::time_point until{};
};

struct relay_state {
  static inline const char* name = "ingestd.relay";
  std::shared_ptr<outbox_repository> outbox;
  std::map<std::string, std::shared_ptr<queue>> destinations;
  std::map<std::string, std::shared_ptr<event_sink>> sinks;
  std::map<std::string, sink_backoff> backoff;
  relay_settings settings;
  std::shared_ptr<worker_metrics> metrics;
  bool busy = false;
  /// Sends and marks not answered yet in the current round.
  int outstanding = 0;
  bool full_batch = false;
};

using relay_impl = with_continuations<relay_actor>;
using relay_ptr = relay_impl::stateful_pointer<relay_state>;

/// Every port call of the relay answers within this, or counts as failed.
constexpr std::chrono::milliseconds relay_call_deadline{std::chrono::seconds{60}};

void tick(relay_ptr self);

void round_done(relay_ptr self) {
  auto& st = self->state;
  if (--st.outstanding > 0)
    return;
  st.busy = false;
  if (st.full_batch)
    self->send(self, tick_atom_v);
  else
    self->delayed_send(self, st.settings.interval, tick_atom_v);
}

/// `quiet`: the caller logged the failure itself (an event sink logs once per back-off, not once
/// per document).
void mark(relay_ptr self, std::vector<int64_t> sent, std::vector<int64_t> failed, std::string why,
          bool quiet = false) {
  auto& st = self->state;
  if (!sent.empty()) {
    ++st.outstanding;
    st.outbox->mark_sent(
        std::move(sent),
        in_actor_within<void>(
            self, relay_call_deadline, "outbox.mark_sent", [self](result<void> r) {
              if (!r) // sent again next time: a duplicate the consumer tolerates
                log::warn("outbox rows sent but not marked", {{"error", r.error().describe()}});
              round_done(self);
            }));
  }
  if (!failed.empty()) {
    // Failed rows are taken again at once (their hold is dropped): the next round waits for the
    // interval even after a full batch, or a batch that keeps failing would spin.
    st.full_batch = false;
    ++st.outstanding;
    auto count = static_cast<int64_t>(failed.size());
    if (!quiet)
      log::warn("outbox rows not sent", {{"rows", count}, {"error", why}});
    st.outbox->mark_failed(
        std::move(failed), why, st.settings.max_attempts,
        in_actor_within<int64_t>(
            self, relay_call_deadline, "outbox.mark_failed", [self, why](const result<int64_t>& r) {
              if (r && *r > 0 && self->state.metrics)
                self->state.metrics->outbox_dead += *r;
              if (r && *r > 0)
                log::error(
                    "outbox rows dead: not sent after the last attempt",
                    {{"rows", *r},
                     {"max_attempts", static_cast<int64_t>(self->state.settings.max_attempts)},
                     {"error", why}});
              round_done(self);
            }));
  }
}

void send_group(relay_ptr self, const std::string& destination, std::vector<outbox_row> rows) {
  auto& st = self->state;
  auto q = st.destinations.find(destination);
  std::vector<int64_t> ids;
  ids.reserve(rows.size());
  for (auto& row : rows)
    ids.push_back(row.id);
  if (q == st.destinations.end())
    return mark(self, {}, std::move(ids), "no queue named \"" + destination + "\" on this node");
  for (size_t from = 0; from < rows.size(); from += 10) {
    std::vector<outgoing_message> messages;
    std::vector<int64_t> chunk;
    for (size_t k = from; k < std::min(rows.size(), from + 10); ++k) {
      messages.push_back(
          {rows[k].body, std::chrono::seconds{0}, rows[k].priority, {}, rows[k].tenant});
      chunk.push_back(rows[k].id);
    }
    ++st.outstanding;
    q->second->send(std::move(messages),
                    in_actor_within<std::vector<batch_entry_result>>(
                        self, relay_call_deadline, "queue.send",
                        [self, chunk](result<std::vector<batch_entry_result>> r) {
                          if (!r) {
                            mark(self, {}, chunk, r.error().describe());
                            return round_done(self);
                          }
                          std::vector<int64_t> sent, failed;
                          std::string why;
                          for (size_t k = 0; k < chunk.size(); ++k) {
                            if (k < r->size() && !(*r)[k].failed) {
                              sent.push_back(chunk[k]);
                            } else {
                              failed.push_back(chunk[k]);
                              if (k < r->size())
                                why = (*r)[k].error.describe();
                              else
                                why = "the queue answered fewer entries than were sent";
                            }
                          }
                          mark(self, std::move(sent), std::move(failed), why);
                          round_done(self);
                        }));
  }
}

/// The sink took an event, or failed one (`why`).
void sink_answered(relay_ptr self, const std::string& destination, const result<void>& r) {
  auto& st = self->state;
  auto& b = st.backoff[destination];
  if (r) {
    if (b.failures > 0)
      log::info("event sink delivers again", {{"sink", destination}});
    b.failures = 0;
    return;
  }
  auto now = self->clock().now();
  if (b.until > now)
    return; // already backing off: another document's event failed in the same round
  ++b.failures;
  auto delay = st.settings.sink_retry_initial;
  for (int i = 1; i < b.failures && delay < st.settings.sink_retry_max; ++i)
    delay *= 2;
  delay = std::min(delay, st.settings.sink_retry_max);
  b.until = now + delay;
  log::warn("event sink failed; its events wait in the outbox",
            {{"sink", destination},
             {"failures_in_a_row", static_cast<int64_t>(b.failures)},
             {"retry_in_ms", static_cast<int64_t>(delay.count())},
             {"error", r.error().describe()}});
}

/// The sink destinations that may be given events now.
std::vector<std::string> ready_sinks(relay_ptr self) {
  auto& st = self->state;
  std::vector<std::string> out;
  auto now = self->clock().now();
  for (auto& [destination, sink] : st.sinks)
    if (auto b = st.backoff.find(destination); b == st.backoff.end() || b->second.until <= now)
      out.push_back(destination);
  return out;
}

/// Delivers rows[next..] of one ordering key to the sink, one after the other; `sent` collects
/// the delivered ids, marked when the chain ends.
void deliver_chain(relay_ptr self, const std::shared_ptr<event_sink>& sink,
                   const std::string& destination,
                   const std::shared_ptr<std::vector<outbox_row>>& rows, size_t next,
                   std::vector<int64_t> sent) {
  auto& row = (*rows)[next];
  sink->deliver(sink_event{row.event_id, row.body},
                in_actor_within<void>(self, relay_call_deadline, "events.deliver",
                                      [self, sink, destination, rows, next,
                                       sent = std::move(sent)](const result<void>& r) mutable {
                                        sink_answered(self, destination, r);
                                        if (r) {
                                          sent.push_back((*rows)[next].id);
                                          if (next + 1 < rows->size())
                                            return deliver_chain(self, sink, destination, rows,
                                                                 next + 1, std::move(sent));
                                          mark(self, std::move(sent), {}, "");
                                          return round_done(self);
                                        }
                                        // The later rows stay untried behind it, under the
                                        // key's lock until the next take.
                                        mark(self, std::move(sent), {(*rows)[next].id},
                                             destination + ": " + r.error().describe(), true);
                                        round_done(self);
                                      }));
}

void send_events(relay_ptr self, const std::string& destination, std::vector<outbox_row> rows) {
  auto& st = self->state;
  auto sink = st.sinks.at(destination);
  // One chain per ordering key, in id order (rows without a key are chains of their own).
  std::map<std::string, std::shared_ptr<std::vector<outbox_row>>> chains;
  std::vector<std::shared_ptr<std::vector<outbox_row>>> order;
  for (auto& row : rows) {
    auto key = row.ordering_key.empty() ? "#" + std::to_string(row.id) : row.ordering_key;
    auto& chain = chains[key];
    if (!chain) {
      chain = std::make_shared<std::vector<outbox_row>>();
      order.push_back(chain);
    }
    chain->push_back(std::move(row));
  }
  for (auto& chain : order) {
    std::sort(chain->begin(), chain->end(), [](auto& a, auto& b) { return a.id < b.id; });
    ++st.outstanding;
    deliver_chain(self, sink, destination, chain, 0, {});
  }
}

void tick(relay_ptr self) {
  auto& st = self->state;
  if (st.busy)
    return;
  st.busy = true;
  st.outstanding = 1; // the take
  st.full_batch = false;
  st.outbox->take(
      st.settings.batch, st.settings.hold, ready_sinks(self),
      in_actor_within<std::vector<outbox_row>>(
          self, relay_call_deadline, "outbox.take", [self](result<std::vector<outbox_row>> r) {
            auto& st = self->state;
            if (!r) {
              log::warn("outbox not read", {{"error", r.error().describe()}});
              return round_done(self);
            }
            st.full_batch = static_cast<int>(r->size()) >= st.settings.batch;
            std::map<std::string, std::vector<outbox_row>> groups;
            for (auto& row : *r)
              groups[row.destination].push_back(std::move(row));
            for (auto& [destination, rows] : groups) {
              if (st.sinks.count(destination) != 0)
                send_events(self, destination, std::move(rows));
              else
                send_group(self, destination, std::move(rows));
            }
            round_done(self);
          }));
}

relay_impl::behavior_type relay(relay_ptr self, std::shared_ptr<outbox_repository> outbox,
                                std::map<std::string, std::shared_ptr<queue>> destinations,
                                relay_settings settings,
                                std::map<std::string, std::shared_ptr<event_sink>> sinks,
                                std::shared_ptr<worker_metrics> metrics) {
  auto& st = self->state;
  st.metrics = std::move(metrics);
  st.outbox = std::move(outbox);
  st.destinations = std::move(destinations);
  st.sinks = std::move(sinks);
  st.settings = settings;
  self->send(self, tick_atom_v);
  self->send(self, flush_atom_v);
  return {
      [self](tick_atom) { tick(self); },
      [self](flush_atom) {
        auto& st = self->state;
        self->delayed_send(self, st.settings.prune_interval, flush_atom_v);
        st.outbox->prune(st.settings.retention, [](result<int64_t> r) {
          if (!r)
            log::warn("outbox not pruned", {{"error", r.error().describe()}});
          else if (*r > 0)
            log::info("outbox pruned", {{"rows", *r}});
        });
      },
      run_continuations(),
  };
}

} // namespace

relay_actor spawn_relay(caf::actor_system& sys, std::shared_ptr<outbox_repository> outbox,
                        std::map<std::string, std::shared_ptr<queue>> destinations,
                        relay_settings settings,
                        std::map<std::string, std::shared_ptr<event_sink>> sinks,
                        std::shared_ptr<worker_metrics> metrics) {
  return sys.spawn(relay, std::move(outbox), std::move(destinations), settings, std::move(sinks),
                   std::move(metrics));
}

} // namespace ingestd
