// In-memory fakes of the claimed-work port: the work_item table the stages' fakes share
// (work_fakes_stages.cpp).
#include "tests/support/fakes/work_fakes.hpp"

#include <algorithm>
#include <utility>

namespace ingestd::test {

// -- fake_work_repository: the port ---------------------------------------------------------

void fake_work_repository::claim(std::vector<claim_request> requests, std::string worker_id,
                                 std::chrono::seconds lease,
                                 callback<std::vector<claim_answer>> done) {
  result<std::vector<claim_answer>> r = std::vector<claim_answer>{};
  {
    std::lock_guard guard{mtx_};
    claim_batches_.push_back(requests.size());
    if (lease.count() <= 0)
      violations_.push_back("claim with a lease of " + std::to_string(lease.count()) + " s");
    if (worker_id.empty())
      violations_.push_back("claim without a worker id");
    if (requests.empty())
      violations_.push_back("claim of no item");
    if (auto err = take_failure("claim")) {
      r = *err;
    } else {
      for (auto& req : requests) {
        if (req.stage.empty())
          violations_.push_back("claim without a stage");
        if (req.token.is_nil() || granted_.count(req.token) > 0)
          violations_.push_back("claim with a token used before");
        if (req.crash_move && (req.crash_move->queue.empty() || req.crash_move->size_class.empty()))
          violations_.push_back("claim with a crash move without a class or queue");
        claim_answer a;
        auto i = items_.find(req.item);
        if (i == items_.end() || i->second.stage != req.stage) {
          a.outcome = claim_outcome::unknown;
          r->push_back(std::move(a));
          continue;
        }
        auto& w = i->second;
        if (w.status != "in-progress") {
          a.outcome = claim_outcome::finished;
          a.detail = w.status;
          r->push_back(std::move(a));
          continue;
        }
        auto before = w;
        w.stranded = false; // its message was seen
        auto max_attempts = std::max(req.max_attempts, 1);
        bool elsewhere = !req.size_class.empty() && w.size_class != req.size_class;
        bool free = !w.token || !w.lease_live;
        bool crashed = w.token.has_value() && !w.lease_live;
        bool known = req.skip_known_files && w.known_file;
        std::string verdict = elsewhere                                        ? "moved"
                              : !free                                          ? "held"
                              : known                                          ? "skipped"
                              : crashed && w.attempt_count + 1 >= max_attempts ? "poison"
                              : crashed && req.crash_move                      ? "move"
                                                                               : "granted";
        bool crash_counted = crashed && !elsewhere && free && !known;
        if (crash_counted) {
          w.attempt_count++;
          w.crash_count++;
          w.last_error
              = std::string{verdict == "poison" ? "poison: " : "worker.crash: "} + "the claim of "
                + (w.claimed_by.empty() ? std::string{"a worker"} : w.claimed_by)
                + " expired without an outcome or give-back (attempt "
                + std::to_string(w.attempt_count) + " of " + std::to_string(max_attempts) + ")";
        }
        if (verdict == "skipped") {
          w.status = "skipped";
          w.last_error = "known_file: its hash is in the known-file set";
          w.token.reset();
          w.lease_live = false;
        } else if (verdict == "poison") {
          w.status = "failed";
          w.error_class = "poison";
          w.token.reset();
          w.lease_live = false;
        } else if (verdict == "move") {
          w.size_class = req.crash_move->size_class;
          w.class_attempts_base = w.attempt_count;
          w.token.reset();
          w.lease_live = false;
          send_locked(req.crash_move->queue, w.id.str(), w.priority);
        } else if (verdict == "granted") {
          w.token = req.token;
          w.claimed_by = worker_id;
          w.lease_live = true;
          w.started = true;
          granted_.insert(req.token);
        }
        if (req.audit && (crash_counted || verdict == "skipped")) {
          std::string outcome = verdict == "skipped"  ? "skipped"
                                : verdict == "poison" ? "poison"
                                : verdict == "move"   ? "moved"
                                                      : "crash";
          auto detail = verdict == "move"
                            ? w.last_error + "; moved to the " + w.size_class + " class"
                            : w.last_error;
          audit_.push_back({audit_event{w.id, "claim", outcome, detail, 0, worker_id, 0}, "claim"});
        }
        changed(before, w);
        if (verdict == "granted") {
          a.outcome = claim_outcome::granted;
          a.work = claimed_work{
              w.id,       req.token,    w.document_id,         w.tenant_id,    w.attempt_count,
              w.priority, w.size_class, w.class_attempts_base, !before.started};
        } else if (verdict == "held") {
          a.outcome = claim_outcome::held;
        } else if (verdict == "moved" || verdict == "move") {
          a.outcome = claim_outcome::moved;
          a.detail = w.last_error;
        } else {
          a.outcome = claim_outcome::finished;
        }
        if (a.detail.empty() && a.outcome != claim_outcome::granted)
          a.detail = w.last_error.empty() ? w.status : w.last_error;
        r->push_back(std::move(a));
      }
    }
    if (maybe_hold("claim", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_work_repository::renew_leases(std::vector<claim_ref> refs, std::chrono::seconds lease,
                                        callback<std::vector<claim_ref>> done) {
  result<std::vector<claim_ref>> r = std::vector<claim_ref>{};
  {
    std::lock_guard guard{mtx_};
    renew_batches_.push_back(refs.size());
    if (lease.count() <= 0)
      violations_.push_back("renew_leases with a lease of " + std::to_string(lease.count()) + " s");
    if (auto err = take_failure("renew_leases")) {
      r = *err;
    } else {
      for (auto& ref : refs) {
        auto i = items_.find(ref.item);
        if (i != items_.end() && i->second.status == "in-progress" && i->second.token
            && *i->second.token == ref.token) {
          i->second.lease_live = true;
          i->second.stranded = false;
        } else {
          r->push_back(ref);
        }
      }
    }
    // Held: the answer (as of this call) is lost until unhold().
    if (maybe_hold("renew_leases", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_work_repository::cancel_requests(std::vector<uuid> ids,
                                           callback<std::vector<uuid>> done) {
  result<std::vector<uuid>> r = std::vector<uuid>{};
  {
    std::lock_guard guard{mtx_};
    cancel_calls_.push_back(ids);
    if (auto err = take_failure("cancel_requests")) {
      r = *err;
    } else {
      for (auto& id : ids)
        if (auto i = items_.find(id);
            i != items_.end() && i->second.cancel_requested && i->second.status == "in-progress")
          r->push_back(id);
    }
    if (maybe_hold("cancel_requests", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_work_repository::complete(std::vector<work_outcome> outcomes,
                                    callback<std::vector<result<void>>> done) {
  result<std::vector<result<void>>> r = std::vector<result<void>>{};
  {
    std::lock_guard guard{mtx_};
    if (outcomes.empty())
      violations_.push_back("complete of no outcome");
    if (auto err = take_failure("complete")) {
      r = *err;
    } else {
      for (auto& o : outcomes)
        r->push_back(finish_locked(o, "complete"));
    }
    if (maybe_hold("complete", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_work_repository::record_failure(claim_ref ref, failure_record record,
                                          std::chrono::seconds retry_delay,
                                          std::vector<audit_event> audit,
                                          callback<failure_outcome> done) {
  result<failure_outcome> r = failure_outcome{};
  {
    std::lock_guard guard{mtx_};
    if (record.max_attempts < 1)
      violations_.push_back("record_failure with max_attempts "
                            + std::to_string(record.max_attempts));
    if (retry_delay.count() < 0)
      violations_.push_back("record_failure with a negative back-off");
    if (record.move && (record.move->queue.empty() || record.move->size_class.empty()))
      violations_.push_back("record_failure with a move without a class or queue");
    if (auto err = take_failure("record_failure")) {
      r = *err;
    } else {
      // The audit rows are written whatever the fence says.
      append_locked(audit, "record_failure", &ref.item);
      if (!holds_locked(ref, "record_failure")) {
        r = error::make_claim_lost("record_failure: work item " + ref.item.str()
                                   + " is no longer held by this claim");
      } else {
        auto& w = items_.at(ref.item);
        auto before = w;
        w.attempt_count++;
        // A decoder helper that died on the document: counted as a crash, as the claim counts one.
        if (record.crash)
          w.crash_count++;
        w.last_error = record.error.describe();
        w.error_class = std::string{to_string(record.error.cls)};
        w.token.reset();
        w.lease_live = false;
        w.stranded = false;
        w.retry_delay = retry_delay;
        bool final
            = !record.move && (record.error.permanent() || w.attempt_count >= record.max_attempts);
        if (record.move) {
          w.size_class = record.move->size_class;
          w.class_attempts_base = w.attempt_count;
          send_locked(record.move->queue, w.id.str(), w.priority);
        }
        if (final)
          w.status = "failed";
        end_token(ref.token);
        changed(before, w);
        r = failure_outcome{w.attempt_count, final};
      }
    }
    if (maybe_hold("record_failure", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_work_repository::release(claim_ref ref, std::chrono::seconds,
                                   std::vector<audit_event> audit, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("release")) {
      r = *err;
    } else {
      append_locked(audit, "release", &ref.item);
      if (!holds_locked(ref, "release")) {
        r = error::make_claim_lost("release: work item " + ref.item.str()
                                   + " is no longer held by this claim");
      } else {
        auto& w = items_.at(ref.item);
        auto before = w;
        w.token.reset();
        w.lease_live = false;
        w.stranded = false;
        w.releases++;
        end_token(ref.token);
        changed(before, w);
      }
    }
    if (maybe_hold("release", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_work_repository::record_cancelled(claim_ref ref, std::vector<audit_event> audit,
                                            callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("record_cancelled")) {
      r = *err;
    } else {
      append_locked(audit, "record_cancelled", &ref.item);
      if (!holds_locked(ref, "record_cancelled")) {
        r = error::make_claim_lost("record_cancelled: work item " + ref.item.str()
                                   + " is no longer held by this claim");
      } else {
        auto& w = items_.at(ref.item);
        auto before = w;
        w.status = "cancelled";
        w.last_error = "cancelled";
        w.token.reset();
        w.lease_live = false;
        end_token(ref.token);
        changed(before, w);
      }
    }
    if (maybe_hold("record_cancelled", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_work_repository::append_audit(std::vector<audit_event> events, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (events.empty())
      violations_.push_back("append_audit of no row");
    if (auto err = take_failure("append_audit"))
      r = *err;
    else
      append_locked(events, "append_audit", nullptr);
    if (maybe_hold("append_audit", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_work_repository::revive(revive_request request, callback<int64_t> done) {
  result<int64_t> r = int64_t{0};
  {
    std::lock_guard guard{mtx_};
    if (request.stage.empty() || request.queue.empty() || request.stale_after.count() <= 0
        || request.limit < 1)
      violations_.push_back("revive of stage \"" + request.stage + "\" to queue \"" + request.queue
                            + "\" with a threshold of "
                            + std::to_string(request.stale_after.count()) + " s and a limit of "
                            + std::to_string(request.limit));
    revive_calls_.push_back(request);
    if (auto err = take_failure("revive")) {
      r = *err;
    } else if (!sweep_lock_elsewhere_) {
      for (auto& [id, w] : items_) {
        if (*r >= request.limit)
          break;
        if (w.stage != request.stage || w.status != "in-progress" || !w.stranded
            || (!request.size_class.empty() && w.size_class != request.size_class)
            || (w.token && w.lease_live))
          continue;
        w.stranded = false;
        send_locked(request.queue, id.str(), w.priority);
        ++*r;
      }
    }
    if (maybe_hold("revive", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

// -- fake_work_repository: the shared table -------------------------------------------------

bool fake_work_repository::holds_locked(const claim_ref& ref, const std::string& op) {
  auto i = items_.find(ref.item);
  if (i != items_.end() && i->second.status == "in-progress" && i->second.token
      && *i->second.token == ref.token)
    return true;
  if (granted_.count(ref.token) == 0)
    violations_.push_back(op + " with a token never granted");
  else if (ended_.count(ref.token) > 0)
    violations_.push_back(op + " with the token of a claim its holder already ended");
  return false;
}

bool fake_work_repository::holds(const claim_ref& ref, const std::string& op) {
  std::lock_guard guard{mtx_};
  return holds_locked(ref, op);
}

void fake_work_repository::end_token(const uuid& token) {
  ended_.insert(token);
}

void fake_work_repository::send_locked(const std::string& queue, const std::string& body,
                                       int32_t priority) {
  if (queue.empty())
    violations_.push_back("a message for " + body + " sent to no queue");
  sent_.push_back({queue, body, priority});
  if (auto q = queues_.find(queue); q != queues_.end())
    q->second->push(body);
}

void fake_work_repository::append_locked(const std::vector<audit_event>& events,
                                         const std::string& by, const uuid* item) {
  for (auto& e : events) {
    if (e.step.empty() || e.outcome.empty())
      violations_.push_back(by + ": an audit row without step or outcome");
    if (e.worker_id.empty())
      violations_.push_back(by + ": an audit row without a worker id");
    if (item != nullptr && e.item != *item)
      violations_.push_back(by + ": an audit row of another item");
    audit_.push_back({e, by});
  }
}

void fake_work_repository::changed(const fake_work_item& before, const fake_work_item& after) {
  auto emit = [&](const char* type) { events_.push_back({after.id, type}); };
  if (after.stage == "match") {
    if (after.status != before.status && after.status == "completed")
      emit("MATCHING_COMPLETED");
    else if (after.status != before.status && after.status == "failed")
      emit("MATCHING_FAILED");
    return;
  }
  if (after.status == "in-progress") {
    if (after.attempt_count > before.attempt_count)
      emit("WARNING");
    if (after.token && after.token != before.token)
      emit("INGESTION_STARTED");
  } else if (after.status != before.status) {
    if (after.status == "completed") {
      emit("INGESTION_COMPLETED");
      emit("DOCUMENT_PROCESSED");
    } else if (after.status == "failed") {
      emit("INGESTION_FAILED");
    } else if (after.status == "skipped") {
      emit("INGESTION_SKIPPED");
    } else if (after.status == "cancelled") {
      emit("INGESTION_CANCELLED");
    }
  }
}

bool fake_work_repository::add_work_locked(const next_work& n) {
  if (n.stage.empty() || n.queue.empty() || n.item.is_nil())
    violations_.push_back("next work without an item, stage or queue");
  auto i = items_.find(n.item);
  if (i != items_.end()) {
    if (!n.reopen)
      return false;
    auto& w = i->second;
    auto before = w;
    w.status = "in-progress";
    w.token.reset();
    w.lease_live = false;
    w.attempt_count = 0;
    w.crash_count = 0;
    w.last_error.clear();
    w.error_class.clear();
    changed(before, w);
    send_locked(n.queue, n.item.str(), n.priority);
    return true;
  }
  fake_work_item w;
  w.id = n.item;
  w.stage = n.stage;
  w.document_id = n.document_id;
  w.tenant_id = n.tenant_id;
  w.priority = n.priority;
  w.size_class = n.size_class;
  items_.emplace(n.item, w);
  send_locked(n.queue, n.item.str(), n.priority);
  return true;
}

bool fake_work_repository::add_work(const next_work& work) {
  std::lock_guard guard{mtx_};
  return add_work_locked(work);
}

result<void> fake_work_repository::finish_locked(const work_outcome& o, const std::string& by) {
  append_locked(o.audit, by, &o.ref.item);
  if (!holds_locked(o.ref, by))
    return error::make_claim_lost(by + ": work item " + o.ref.item.str()
                                  + " is no longer held by this claim");
  auto& w = items_.at(o.ref.item);
  auto before = w;
  w.status = "completed";
  w.token.reset();
  w.lease_live = false;
  w.completions++;
  if (!o.remark.empty())
    w.last_error = o.remark;
  end_token(o.ref.token);
  changed(before, w);
  for (auto& n : o.next)
    add_work_locked(n);
  return {};
}

result<void> fake_work_repository::finish(const work_outcome& outcome, const std::string& by) {
  std::lock_guard guard{mtx_};
  return finish_locked(outcome, by);
}

// -- fake_work_repository: the test's side --------------------------------------------------

uuid fake_work_repository::add(const std::string& stage, const uuid& id, const uuid& document,
                               const uuid& tenant, int32_t attempts) {
  std::lock_guard guard{mtx_};
  fake_work_item w;
  w.id = id;
  w.stage = stage;
  w.document_id = document;
  w.tenant_id = tenant;
  w.attempt_count = attempts;
  if (!items_.emplace(id, w).second)
    violations_.push_back("the test added work item " + id.str() + " twice");
  return id;
}

void fake_work_repository::update(const uuid& id,
                                  const std::function<void(fake_work_item&)>& change) {
  std::lock_guard guard{mtx_};
  change(items_.at(id));
}

fake_work_item fake_work_repository::item(const uuid& id) {
  std::lock_guard guard{mtx_};
  return items_.at(id);
}

bool fake_work_repository::has(const uuid& id) {
  std::lock_guard guard{mtx_};
  return items_.count(id) > 0;
}

void fake_work_repository::steal_claim(const uuid& id) {
  std::lock_guard guard{mtx_};
  auto& w = items_.at(id);
  auto before = w;
  w.token = uuid::v7();
  w.claimed_by = "another-worker";
  w.lease_live = true;
  w.started = true;
  changed(before, w);
}

void fake_work_repository::hold_by_other(const uuid& id) {
  steal_claim(id);
}

void fake_work_repository::crash_holder(const uuid& id) {
  std::lock_guard guard{mtx_};
  auto& w = items_.at(id);
  if (!w.token || !w.lease_live)
    violations_.push_back("crash_holder on an item nobody holds");
  w.lease_live = false;
}

void fake_work_repository::request_cancel(const uuid& id) {
  std::lock_guard guard{mtx_};
  auto& w = items_.at(id);
  if (w.status != "in-progress")
    return;
  auto before = w;
  if (w.token && w.lease_live) {
    w.cancel_requested = true;
  } else {
    w.status = "cancelled";
    w.token.reset();
  }
  changed(before, w);
}

void fake_work_repository::strand(const uuid& id) {
  std::lock_guard guard{mtx_};
  items_.at(id).stranded = true;
}

void fake_work_repository::hold_sweep_lock_elsewhere(bool held) {
  std::lock_guard guard{mtx_};
  sweep_lock_elsewhere_ = held;
}

void fake_work_repository::connect(const std::string& queue, std::shared_ptr<fake_queue> q) {
  std::lock_guard guard{mtx_};
  queues_[queue] = std::move(q);
}

std::vector<fake_sent_message> fake_work_repository::sent() {
  std::lock_guard guard{mtx_};
  return sent_;
}

std::vector<std::string> fake_work_repository::sent_to(const std::string& queue) {
  std::lock_guard guard{mtx_};
  std::vector<std::string> out;
  for (auto& m : sent_)
    if (m.queue == queue)
      out.push_back(m.body);
  return out;
}

std::vector<audit_event> fake_work_repository::audit() {
  std::lock_guard guard{mtx_};
  std::vector<audit_event> out;
  out.reserve(audit_.size());
  for (auto& row : audit_)
    out.push_back(row.event);
  return out;
}

std::vector<fake_audit_row> fake_work_repository::audit_rows() {
  std::lock_guard guard{mtx_};
  return audit_;
}

std::vector<fake_status_event> fake_work_repository::status_events() {
  std::lock_guard guard{mtx_};
  return events_;
}

std::vector<std::string> fake_work_repository::status_events_of(const uuid& id) {
  std::lock_guard guard{mtx_};
  std::vector<std::string> out;
  for (auto& e : events_)
    if (e.item == id)
      out.push_back(e.type);
  return out;
}

std::vector<size_t> fake_work_repository::claim_batch_sizes() {
  std::lock_guard guard{mtx_};
  return claim_batches_;
}

int fake_work_repository::renew_calls() {
  std::lock_guard guard{mtx_};
  return static_cast<int>(renew_batches_.size());
}

std::vector<size_t> fake_work_repository::renew_batch_sizes() {
  std::lock_guard guard{mtx_};
  return renew_batches_;
}

std::vector<std::vector<uuid>> fake_work_repository::cancel_request_calls() {
  std::lock_guard guard{mtx_};
  return cancel_calls_;
}

std::vector<revive_request> fake_work_repository::revive_calls() {
  std::lock_guard guard{mtx_};
  return revive_calls_;
}

std::vector<std::string> fake_work_repository::violations() {
  std::lock_guard guard{mtx_};
  return violations_;
}

} // namespace ingestd::test
