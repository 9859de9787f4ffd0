// Coalesces claim / complete / append_events across jobs: one flusher thread sends a batch when
// its window (counted from its first call) ends or it is full; the wrapped repository's answer is
// split back by position.
#include "adapters/db/batching_repository.hpp"
#include "adapters/support/thread_name.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace ingestd {

namespace {

using steady = std::chrono::steady_clock;

struct claim_part {
  size_t count;
  callback<std::vector<std::optional<claimed_ingestion>>> done;
};
struct complete_part {
  size_t count;
  callback<std::vector<result<void>>> done;
};

} // namespace

struct batching_repository::impl {
  repository& inner;
  batching_options opts;
  std::mutex mtx;
  std::condition_variable cv;
  bool stopping = false;

  // Claims are batched per (worker id, lease): in practice one key per worker.
  std::vector<claim_request> claims;
  std::vector<claim_part> claim_parts;
  std::string claim_worker;
  std::chrono::seconds claim_lease{0};
  std::optional<steady::time_point> claim_due;

  std::vector<completion> completions;
  std::vector<complete_part> complete_parts;
  std::optional<steady::time_point> complete_due;

  std::vector<audit_event> events;
  std::vector<callback<void>> event_parts;
  std::optional<steady::time_point> events_due;

  counters count;
  std::thread flusher;

  impl(repository& r, batching_options o) : inner(r), opts(o) {
    flusher = std::thread{[this] { loop(); }};
  }

  ~impl() {
    {
      std::lock_guard g{mtx};
      stopping = true;
    }
    cv.notify_all();
    flusher.join();
  }

  // Called with the lock held; takes the batch out and sends it after unlocking.
  void send_claims(std::unique_lock<std::mutex>& lock) {
    auto reqs = std::move(claims);
    auto parts = std::move(claim_parts);
    auto worker = claim_worker;
    auto lease = claim_lease;
    claims.clear();
    claim_parts.clear();
    claim_due.reset();
    ++count.claim_calls_out;
    lock.unlock();
    inner.claim(std::move(reqs), std::move(worker), lease,
                [parts = std::move(parts)](result<std::vector<std::optional<claimed_ingestion>>> r) {
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
                });
    lock.lock();
  }

  void send_completions(std::unique_lock<std::mutex>& lock) {
    auto batch = std::move(completions);
    auto parts = std::move(complete_parts);
    completions.clear();
    complete_parts.clear();
    complete_due.reset();
    ++count.complete_calls_out;
    lock.unlock();
    inner.complete(std::move(batch), [parts = std::move(parts)](result<std::vector<result<void>>> r) {
      size_t at = 0;
      for (const auto& p : parts) {
        if (!r) {
          p.done(r.error());
        } else {
          std::vector<result<void>> mine;
          for (size_t i = 0; i < p.count; ++i)
            mine.push_back(at + i < r->size() ? (*r)[at + i]
                                              : result<void>{error::make_transient("batch.short_answer",
                                                                                   "no result for a completion")});
          p.done(std::move(mine));
        }
        at += p.count;
      }
    });
    lock.lock();
  }

  void send_events(std::unique_lock<std::mutex>& lock) {
    auto batch = std::move(events);
    auto parts = std::move(event_parts);
    events.clear();
    event_parts.clear();
    events_due.reset();
    ++count.event_calls_out;
    lock.unlock();
    inner.append_events(std::move(batch), [parts = std::move(parts)](result<void> r) {
      for (const auto& done : parts)
        done(r);
    });
    lock.lock();
  }

  void loop() {
    name_this_thread("ingestd-batch");
    std::unique_lock lock{mtx};
    for (;;) {
      auto now = steady::now();
      if (claim_due && (*claim_due <= now || stopping))
        send_claims(lock);
      if (complete_due && (*complete_due <= now || stopping))
        send_completions(lock);
      if (events_due && (*events_due <= now || stopping))
        send_events(lock);
      if (stopping && !claim_due && !complete_due && !events_due)
        return;
      std::optional<steady::time_point> next;
      for (auto& d : {claim_due, complete_due, events_due})
        if (d && (!next || *d < *next))
          next = d;
      if (next)
        cv.wait_until(lock, *next);
      else
        cv.wait(lock);
    }
  }

  /// Marks a batch due: after the window for its first entry, at once when full.
  void arm(std::optional<steady::time_point>& due, size_t size) {
    if (size >= opts.max_batch)
      due = steady::now();
    else if (!due)
      due = steady::now() + opts.window;
    else
      return;
    cv.notify_one();
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
  if (!impl_->claims.empty() && (impl_->claim_worker != worker_id || impl_->claim_lease != lease))
    impl_->send_claims(lock);
  impl_->claim_worker = std::move(worker_id);
  impl_->claim_lease = lease;
  impl_->claim_parts.push_back({requests.size(), std::move(done)});
  for (auto& r : requests)
    impl_->claims.push_back(std::move(r));
  impl_->arm(impl_->claim_due, impl_->claims.size());
}

void batching_repository::complete(std::vector<completion> completions,
                                   callback<std::vector<result<void>>> done) {
  if (completions.empty()) {
    done(std::vector<result<void>>{});
    return;
  }
  std::unique_lock lock{impl_->mtx};
  ++impl_->count.complete_calls_in;
  impl_->complete_parts.push_back({completions.size(), std::move(done)});
  for (auto& c : completions)
    impl_->completions.push_back(std::move(c));
  impl_->arm(impl_->complete_due, impl_->completions.size());
}

void batching_repository::append_events(std::vector<audit_event> events, callback<void> done) {
  if (events.empty()) {
    done(result<void>{});
    return;
  }
  std::unique_lock lock{impl_->mtx};
  ++impl_->count.event_calls_in;
  impl_->event_parts.push_back(std::move(done));
  for (auto& e : events)
    impl_->events.push_back(std::move(e));
  impl_->arm(impl_->events_due, impl_->events.size());
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
void batching_repository::rescue_stranded(std::chrono::seconds stale_threshold, int limit,
                                          callback<std::vector<uuid>> done) {
  inner_->rescue_stranded(stale_threshold, limit, std::move(done));
}
void batching_repository::create_ingestion(intake_request request, callback<intake_result> done) {
  inner_->create_ingestion(std::move(request), std::move(done));
}
void batching_repository::find_ingestion(uuid ingestion_id, callback<std::optional<ingestion_status>> done) {
  inner_->find_ingestion(ingestion_id, std::move(done));
}
void batching_repository::summarize(callback<status_summary> done) { inner_->summarize(std::move(done)); }

} // namespace ingestd
