// The sweeper actor. Every sweeper_interval: under the cluster-wide advisory lock (one node at a
// time), find `in-progress` ingestions that nobody holds and that truly have no queue message,
// mark them due now and send their ids to the queue again. A duplicate message is harmless (the
// claim lets one job through) but a backlog must not get one at every sweep: see the rescue
// statement in adapters/db/pg_repository.cpp for how "no message" is told.
//
//   tick (re-armed first) ──► queue stats ──visible or delayed messages: a backlog──► skip
//                                 │         └─error (logged)──────────────────────────► skip
//                                 └─none waiting──► rescue_stranded ──found──► send ──► counted, logged
//                                                          └─none / lock held elsewhere / error (logged)
//
// With size classes the ingest net watches both classes' queues and sends each ingestion to its
// own class's queue, at its own priority.
//
// Beside it, when the node serves the match stage, the same net for matching: pending documents
// whose message was not seen for longer than the longest back-off and that (Postgres queue) no
// message of the match queue names, e.g. a message given back as often as the redrive allows and
// dead-lettered before a delivery counted, are sent to the match queue again. And when it serves
// the unpack stage, the ingest net over containers (unpack ingestions), sent to the unpack queue.
#include "actors/sweeper.hpp"

#include <algorithm>
#include <functional>
#include <optional>

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
  /// A sweep of the ingestions, of the matching jobs, is running (each waits for its own calls).
  bool sweeping = false;
  bool sweeping_matching = false;
  bool sweeping_unpack = false;
};

using sweeper_ptr = sweeper_actor::stateful_pointer<sweeper_state>;

/// One net: the queues whose work it guards (a backlog in any of them holds the sweep), how it
/// finds the stranded work (the repository's rescue, given its callback), where each piece goes,
/// and which of the state's flags says it runs.
struct net {
  /// "ingestions" or "matching jobs", for the logs.
  const char* what;
  std::vector<std::shared_ptr<queue>> watched;
  std::function<void(callback<std::vector<stranded_ingestion>>)> find;
  /// The queue of one piece of stranded work.
  std::function<std::shared_ptr<queue>(const stranded_ingestion&)> target;
  bool sweeper_state::*running;
};

/// A net over ids alone (matching, unpacking): one queue, the default priority.
std::function<void(callback<std::vector<stranded_ingestion>>)>
as_stranded(std::function<void(callback<std::vector<uuid>>)> find_ids) {
  return [find_ids = std::move(find_ids)](callback<std::vector<stranded_ingestion>> done) {
    find_ids([done = std::move(done)](result<std::vector<uuid>> r) {
      if (!r)
        return done(r.error());
      std::vector<stranded_ingestion> out;
      out.reserve(r->size());
      for (auto& id : *r)
        out.push_back({id, "small", default_priority});
      done(std::move(out));
    });
  };
}

constexpr int batch_limit = 500;
/// Each port call of a sweep answers within two intervals (at least a minute), or counts as
/// failed: a lost answer must not leave the sweeper "sweeping" for ever.
std::chrono::milliseconds call_deadline(const worker_settings& s) {
  return std::max<std::chrono::milliseconds>(2 * s.sweeper_interval, std::chrono::minutes{1});
}

/// The sweep of `n` ends; `why` (when not null) is logged with the error.
void sweep_done(sweeper_ptr self, const net& n, const char* why = nullptr, const error* err = nullptr) {
  self->state.*n.running = false;
  if (why != nullptr)
    log::warn(why, {{"work", n.what}, {"error", err != nullptr ? err->describe() : std::string{}}});
}

/// Sends the stranded work, one batch per target queue; the sweep ends with the last answer.
void enqueue(sweeper_ptr self, const net& n, const std::vector<stranded_ingestion>& found) {
  auto& st = self->state;
  std::vector<std::pair<std::shared_ptr<queue>, std::vector<outgoing_message>>> batches;
  for (const auto& s : found) {
    auto q = n.target(s);
    auto b = std::find_if(batches.begin(), batches.end(), [&](auto& x) { return x.first == q; });
    if (b == batches.end())
      b = batches.insert(batches.end(), {q, {}});
    b->second.push_back({s.id.str(), std::chrono::seconds{0}, s.priority});
  }
  auto left = std::make_shared<size_t>(batches.size());
  for (auto& [q, messages] : batches) {
    auto count = static_cast<int64_t>(messages.size());
    q->send(std::move(messages),
            in_actor_within<std::vector<batch_entry_result>>(
              self, call_deadline(st.ctx->settings), "queue.send",
              [self, n, count, left, name = q->name()](result<std::vector<batch_entry_result>> r) {
                auto last = --*left == 0;
                // Not sent: they stay stranded; the next sweep finds them again once the threshold passed.
                if (!r) {
                  log::warn("sweeper could not re-enqueue", {{"work", n.what}, {"queue", name},
                                                             {"error", r.error().describe()}});
                } else {
                  int64_t sent = 0;
                  for (auto& e : *r)
                    if (!e.failed)
                      ++sent;
                  self->state.ctx->metrics->rescues += sent;
                  log::info("sweeper re-enqueued stranded work",
                            {{"work", n.what}, {"queue", name}, {"sent", sent}, {"failed", count - sent}});
                }
                if (last)
                  sweep_done(self, n);
              }));
  }
}

/// The watched queues' depth, one after the other: whether any holds visible or delayed messages.
void any_backlog(sweeper_ptr self, const net& n, size_t i, std::function<void(result<bool>)> next) {
  if (i == n.watched.size())
    return next(false);
  n.watched[i]->stats(in_actor_within<queue_stats>(
    self, call_deadline(self->state.ctx->settings), "queue.stats",
    [self, n, i, next = std::move(next)](result<queue_stats> r) mutable {
      if (!r)
        return next(r.error());
      if (r->visible + r->delayed > 0) {
        log::debug("sweep skipped: messages wait in the queue", {{"work", n.what},
                                                                 {"queue", n.watched[i]->name()},
                                                                 {"visible", r->visible},
                                                                 {"delayed", r->delayed}});
        return next(true);
      }
      any_backlog(self, n, i + 1, std::move(next));
    }));
}

/// A message waiting unreceived in the queue is one the database cannot see (SQS): while any
/// waits, work that looks stranded may be among it, so the sweep waits for the backlog.
void sweep(sweeper_ptr self, const net& n) {
  auto& st = self->state;
  if (st.*n.running)
    return;
  st.*n.running = true;
  auto deadline = call_deadline(st.ctx->settings);
  any_backlog(self, n, 0, [self, n, deadline](result<bool> backlog) {
    if (!backlog)
      return sweep_done(self, n, "sweep skipped: queue depth unknown", &backlog.error());
    if (*backlog)
      return sweep_done(self, n);
    n.find(in_actor_within<std::vector<stranded_ingestion>>(
      self, deadline, "db.rescue_stranded", [self, n](result<std::vector<stranded_ingestion>> found) {
        if (!found)
          return sweep_done(self, n, "sweep failed", &found.error());
        if (found->empty())
          return sweep_done(self, n);
        enqueue(self, n, *found);
      }));
  });
}

/// Longer than any invisibility the queue gives a message (a receive, a heartbeat extension), so
/// that a message that still exists has been seen within it; never shorter than the configured
/// stale threshold. The margin covers the queue's approximate counts and clock differences.
std::chrono::seconds stale_after(const worker_settings& s) {
  constexpr std::chrono::seconds margin{60};
  return std::max(s.stale_threshold, std::max(s.visibility_timeout, s.heartbeat_extension) + margin);
}

/// The ingest stage's net: each ingestion back to its size class's queue (the large class's when
/// the node has it), at its priority.
net ingestion_net(const sweeper_state& st) {
  auto db = st.ctx->ports.db;
  auto threshold = stale_after(st.ctx->settings);
  auto small = st.ctx->ports.ingest_queue;
  auto large = st.ctx->ports.large_ingest_queue;
  std::vector<std::shared_ptr<queue>> watched{small};
  if (large)
    watched.push_back(large);
  return {"ingestions", std::move(watched),
          [db, threshold](callback<std::vector<stranded_ingestion>> done) {
            db->rescue_stranded(threshold, batch_limit, std::move(done));
          },
          [small, large](const stranded_ingestion& s) { return s.size_class == "large" && large ? large : small; },
          &sweeper_state::sweeping};
}

/// The match stage's net when this node serves it. Its threshold outlasts the longest back-off
/// too (a transient failure leaves the message invisible that long).
std::optional<net> matching_net(const sweeper_state& st) {
  if (!st.ctx->ports.matching)
    return std::nullopt;
  for (auto& s : st.ctx->stages) {
    if (s->name != "match")
      continue;
    std::chrono::seconds longest{0};
    for (auto b : s->retry_backoff)
      longest = std::max(longest, b);
    auto threshold = longest + stale_after(st.ctx->settings);
    return net{"matching jobs", {s->queue},
               as_stranded([repo = st.ctx->ports.matching, queue_name = s->queue_name,
                            threshold](callback<std::vector<uuid>> done) {
                 repo->rescue_stranded(queue_name, threshold, batch_limit, std::move(done));
               }),
               [q = s->queue](const stranded_ingestion&) { return q; },
               &sweeper_state::sweeping_matching};
  }
  return std::nullopt;
}

/// The unpack stage's net when this node serves it: containers whose message is gone go back to
/// the unpack queue (the ingest net leaves them alone).
std::optional<net> unpack_net(const sweeper_state& st) {
  if (!st.ctx->ports.containers)
    return std::nullopt;
  for (auto& s : st.ctx->stages) {
    if (s->name != "unpack")
      continue;
    auto threshold = stale_after(st.ctx->settings);
    return net{"unpack jobs", {s->queue},
               as_stranded([repo = st.ctx->ports.containers, threshold](callback<std::vector<uuid>> done) {
                 repo->rescue_stranded(threshold, batch_limit, std::move(done));
               }),
               [q = s->queue](const stranded_ingestion&) { return q; },
               &sweeper_state::sweeping_unpack};
  }
  return std::nullopt;
}

sweeper_actor::behavior_type sweeper(sweeper_ptr self, std::shared_ptr<worker_context> ctx) {
  self->state.ctx = std::move(ctx);
  self->send(self, tick_atom_v);
  return {
    [self](tick_atom) {
      auto& st = self->state;
      self->delayed_send(self, st.ctx->settings.sweeper_interval, tick_atom_v);
      if (auto matching = matching_net(st))
        sweep(self, *matching);
      if (auto unpack = unpack_net(st))
        sweep(self, *unpack);
      sweep(self, ingestion_net(st));
    },
    [](resume_atom, uint64_t, continuation& c) { c.fn(); },
  };
}

} // namespace

sweeper_actor spawn_sweeper(caf::actor_system& sys, std::shared_ptr<worker_context> ctx) {
  return sys.spawn(sweeper, std::move(ctx));
}

} // namespace ingestd
