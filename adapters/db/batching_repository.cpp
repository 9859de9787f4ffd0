// Coalesces claim / complete / append_events across jobs without a timer: while one statement of a
// kind runs, calls of that kind wait, and they go together as the next statement when it returns.
// Under load a batch forms during each round trip; when idle, a call goes at once. The wrapped
// repository's answer is split back to the callers by position.
#include "adapters/db/batching_repository.hpp"

#include <condition_variable>
#include <mutex>

namespace ingestd {

namespace {

struct claim_part {
  size_t count;
  callback<std::vector<std::optional<claimed_ingestion>>> done;
};

struct complete_part {
  size_t count;
  callback<std::vector<result<void>>> done;
};

struct events_part {
  size_t count;
  callback<void> done;
};

/// The answers of items [at, at + count) of a batch; a transient error for any that the wrapped
/// repository left out.
std::vector<result<void>> slice(const std::vector<result<void>>& all, size_t at, size_t count,
                                const char* what) {
  std::vector<result<void>> mine;
  for (size_t i = at; i < at + count; ++i)
    mine.push_back(i < all.size() ? all[i]
                                  : result<void>{error::make_transient("batch.short_answer",
                                                                       std::string{"no result for "} + what)});
  return mine;
}

/// The calls of one kind waiting for the running statement, and whether one runs.
template <class Item, class Part>
struct lane {
  std::vector<Item> items;
  std::vector<Part> parts;
  bool running = false;

  /// Takes whole calls, up to `max` items (at least one call), leaving the rest for later.
  std::pair<std::vector<Item>, std::vector<Part>> take(size_t max) {
    std::vector<Item> batch;
    std::vector<Part> taken;
    size_t used = 0, n = 0;
    while (n < parts.size() && (n == 0 || used + parts[n].count <= max)) {
      used += parts[n].count;
      ++n;
    }
    batch.assign(std::make_move_iterator(items.begin()), std::make_move_iterator(items.begin() + static_cast<std::ptrdiff_t>(used)));
    items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(used));
    taken.assign(std::make_move_iterator(parts.begin()), std::make_move_iterator(parts.begin() + static_cast<std::ptrdiff_t>(n)));
    parts.erase(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(n));
    return {std::move(batch), std::move(taken)};
  }
};

} // namespace

struct batching_repository::impl {
  repository& inner;
  batching_options opts;
  std::mutex mtx;
  std::condition_variable idle;
  // Claims are batched per (worker id, lease): in practice one key per worker.
  lane<claim_request, claim_part> claims;
  std::string claim_worker;
  std::chrono::seconds claim_lease{0};
  lane<completion, complete_part> completions;
  lane<audit_event, events_part> events;
  counters count;

  impl(repository& r, batching_options o) : inner(r), opts(o) {}

  /// Waits until no statement runs: their answers come back into this object.
  ~impl() {
    std::unique_lock lock{mtx};
    idle.wait(lock, [this] { return !claims.running && !completions.running && !events.running; });
  }

  /// Sends the next batch of claims if any waits, else marks the lane idle. Called with the lock
  /// held; unlocks before calling the wrapped repository.
  void next_claims(std::unique_lock<std::mutex>& lock) {
    if (claims.parts.empty()) {
      claims.running = false;
      idle.notify_all();
      return;
    }
    claims.running = true;
    auto [reqs, parts] = claims.take(opts.max_batch);
    auto worker = claim_worker;
    auto lease = claim_lease;
    ++count.claim_calls_out;
    lock.unlock();
    inner.claim(std::move(reqs), std::move(worker), lease,
                [this, parts = std::move(parts)](result<std::vector<std::optional<claimed_ingestion>>> r) {
                  size_t at = 0;
                  for (const auto& p : parts) {
                    if (!r) {
                      p.done(r.error());
                    } else {
                      std::vector<std::optional<claimed_ingestion>> mine;
                      for (size_t i = 0; i < p.count; ++i)
                        mine.push_back(at + i < r->size() ? (*r)[at + i] : std::nullopt);
                      p.done(std::move(mine));
                    }
                    at += p.count;
                  }
                  std::unique_lock again{mtx};
                  next_claims(again);
                });
  }

  void next_completions(std::unique_lock<std::mutex>& lock) {
    if (completions.parts.empty()) {
      completions.running = false;
      idle.notify_all();
      return;
    }
    completions.running = true;
    auto [batch, parts] = completions.take(opts.max_batch);
    ++count.complete_calls_out;
    lock.unlock();
    inner.complete(std::move(batch), [this, parts = std::move(parts)](result<std::vector<result<void>>> r) {
      size_t at = 0;
      for (const auto& p : parts) {
        if (!r)
          p.done(r.error());
        else
          p.done(slice(*r, at, p.count, "a completion"));
        at += p.count;
      }
      std::unique_lock again{mtx};
      next_completions(again);
    });
  }

  void next_events(std::unique_lock<std::mutex>& lock) {
    if (events.parts.empty()) {
      events.running = false;
      idle.notify_all();
      return;
    }
    events.running = true;
    auto [batch, parts] = events.take(opts.max_batch);
    ++count.event_calls_out;
    lock.unlock();
    // An answer per event, so that an event the database refuses fails only its own caller.
    inner.append_events_each(std::move(batch), [this, parts = std::move(parts)](
                                                 result<std::vector<result<void>>> r) {
      size_t at = 0;
      for (const auto& p : parts) {
        if (!r)
          p.done(r.error());
        else
          p.done(all_stored(slice(*r, at, p.count, "an event")));
        at += p.count;
      }
      std::unique_lock again{mtx};
      next_events(again);
    });
  }
};

batching_repository::batching_repository(std::shared_ptr<repository> inner, batching_options opts)
  : inner_(std::move(inner)), impl_(std::make_unique<impl>(*inner_, opts)) {}

batching_repository::~batching_repository() = default;

void batching_repository::claim(std::vector<claim_request> requests, std::string worker_id,
                                std::chrono::seconds lease,
                                callback<std::vector<std::optional<claimed_ingestion>>> done) {
  if (requests.empty()) {
    done(std::vector<std::optional<claimed_ingestion>>{});
    return;
  }
  std::unique_lock lock{impl_->mtx};
  ++impl_->count.claim_calls_in;
  auto& lane = impl_->claims;
  if (!lane.parts.empty() && (impl_->claim_worker != worker_id || impl_->claim_lease != lease)) {
    // Another key than the calls waiting: it goes alone (not seen in practice).
    ++impl_->count.claim_calls_out;
    lock.unlock();
    inner_->claim(std::move(requests), std::move(worker_id), lease, std::move(done));
    return;
  }
  impl_->claim_worker = std::move(worker_id);
  impl_->claim_lease = lease;
  lane.parts.push_back({requests.size(), std::move(done)});
  // claim_request is trivially copyable: a copy is as cheap as a move.
  lane.items.insert(lane.items.end(), requests.begin(), requests.end());
  if (!lane.running)
    impl_->next_claims(lock);
}

void batching_repository::complete(std::vector<completion> completions,
                                   callback<std::vector<result<void>>> done) {
  if (completions.empty()) {
    done(std::vector<result<void>>{});
    return;
  }
  std::unique_lock lock{impl_->mtx};
  ++impl_->count.complete_calls_in;
  auto& lane = impl_->completions;
  lane.parts.push_back({completions.size(), std::move(done)});
  for (auto& c : completions)
    lane.items.push_back(std::move(c));
  if (!lane.running)
    impl_->next_completions(lock);
}

void batching_repository::append_events(std::vector<audit_event> events, callback<void> done) {
  if (events.empty()) {
    done(result<void>{});
    return;
  }
  std::unique_lock lock{impl_->mtx};
  ++impl_->count.event_calls_in;
  auto& lane = impl_->events;
  lane.parts.push_back({events.size(), std::move(done)});
  for (auto& e : events)
    lane.items.push_back(std::move(e));
  if (!lane.running)
    impl_->next_events(lock);
}

batching_repository::counters batching_repository::stats() const {
  std::lock_guard g{impl_->mtx};
  return impl_->count;
}

void batching_repository::states(std::vector<uuid> ids, callback<std::vector<ingestion_state>> done) {
  inner_->states(std::move(ids), std::move(done));
}
void batching_repository::record_transcription(lease_ref ref, transcription_record record, callback<void> done) {
  inner_->record_transcription(ref, std::move(record), std::move(done));
}
void batching_repository::record_failure(lease_ref ref, failure_record record, std::chrono::seconds retry_delay,
                                         callback<failure_outcome> done) {
  inner_->record_failure(ref, std::move(record), retry_delay, std::move(done));
}
void batching_repository::renew_leases(std::vector<lease_ref> refs, std::chrono::seconds lease,
                                       callback<std::vector<lease_ref>> done) {
  inner_->renew_leases(std::move(refs), lease, std::move(done));
}
void batching_repository::release(lease_ref ref, callback<void> done) { inner_->release(ref, std::move(done)); }
void batching_repository::cancel_requests(std::vector<uuid> ids, callback<std::vector<uuid>> done) {
  inner_->cancel_requests(std::move(ids), std::move(done));
}
void batching_repository::record_cancelled(lease_ref ref, callback<void> done) {
  inner_->record_cancelled(ref, std::move(done));
}
void batching_repository::rescue_stranded(std::chrono::seconds stale_threshold, int limit,
                                          callback<std::vector<stranded_ingestion>> done) {
  inner_->rescue_stranded(stale_threshold, limit, std::move(done));
}

} // namespace ingestd
