// In-memory port fakes for the actor tests.
#include "tests/support/fakes/fakes.hpp"

#include <algorithm>

namespace ingestd::test {

// -- fault_script -------------------------------------------------------------

void fault_script::fail_next(const std::string& op, error err) {
  std::lock_guard guard{mtx_};
  failures_[op].push_back(std::move(err));
}

void fault_script::hold(const std::string& op) {
  std::lock_guard guard{mtx_};
  holding_[op] = true;
}

void fault_script::unhold(const std::string& op) {
  std::vector<std::function<void()>> calls;
  {
    std::lock_guard guard{mtx_};
    holding_[op] = false;
    calls.swap(held_[op]);
  }
  for (auto& call : calls)
    call();
}

size_t fault_script::held(const std::string& op) {
  std::lock_guard guard{mtx_};
  return held_[op].size();
}

std::optional<error> fault_script::take_failure(const std::string& op) {
  auto i = failures_.find(op);
  if (i == failures_.end() || i->second.empty())
    return std::nullopt;
  auto e = std::move(i->second.front());
  i->second.pop_front();
  return e;
}

bool fault_script::maybe_hold(const std::string& op, std::function<void()> continuation) {
  if (!holding_[op])
    return false;
  held_[op].push_back(std::move(continuation));
  return true;
}

// -- fake_queue ---------------------------------------------------------------

std::string fake_queue::push(const std::string& body) {
  std::lock_guard guard{mtx_};
  auto id = "m" + std::to_string(++next_id_);
  entry e;
  e.msg.id = id;
  e.msg.body = body;
  e.msg.sent_at_ms = 1;
  entries_.emplace(id, std::move(e));
  order_.push_back(id);
  return id;
}

std::vector<queue_message> fake_queue::take_visible(int max, std::chrono::seconds visibility) {
  std::vector<queue_message> out;
  for (auto& id : order_) {
    if (static_cast<int>(out.size()) >= max)
      break;
    auto& e = entries_.at(id);
    if (!e.visible || e.deleted)
      continue;
    e.visible = false;
    e.last_visibility = visibility;
    e.msg.receive_count++;
    e.msg.receipt = "r" + std::to_string(++next_receipt_) + "-" + id;
    receipt_to_id_[e.msg.receipt] = id;
    out.push_back(e.msg);
  }
  return out;
}

void fake_queue::receive(int max_messages, std::chrono::seconds, std::chrono::seconds visibility,
                         callback<std::vector<queue_message>> done) {
  std::optional<error> failure;
  std::vector<queue_message> got;
  {
    std::lock_guard guard{mtx_};
    if (max_messages < 1 || max_messages > 10)
      violations_.push_back("receive of " + std::to_string(max_messages) + " messages (1-10 allowed)");
    receive_sizes_.push_back(max_messages);
    failure = take_failure("receive");
    if (!failure) {
      got = take_visible(max_messages, visibility);
      if (got.empty()) {
        waiting_.emplace_back(max_messages, std::move(done));
        return;
      }
    }
  }
  if (failure)
    return done(*failure);
  done(std::move(got));
}

void fake_queue::deliver_pending() {
  std::vector<std::pair<callback<std::vector<queue_message>>, std::vector<queue_message>>> ready;
  {
    std::lock_guard guard{mtx_};
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& [max, cb] : waiting) {
      auto got = take_visible(max, std::chrono::seconds{30});
      if (got.empty())
        waiting_.emplace_back(max, std::move(cb));
      else
        ready.emplace_back(std::move(cb), std::move(got));
    }
  }
  for (auto& [cb, msgs] : ready)
    cb(std::move(msgs));
}

void fake_queue::end_waits() {
  std::vector<std::pair<int, callback<std::vector<queue_message>>>> waiting;
  {
    std::lock_guard guard{mtx_};
    waiting.swap(waiting_);
  }
  for (auto& [max, cb] : waiting)
    cb(std::vector<queue_message>{});
}

void fake_queue::expire(const std::string& id) {
  std::lock_guard guard{mtx_};
  entries_.at(id).visible = true;
}

void fake_queue::remove(std::vector<std::string> receipts, callback<std::vector<batch_entry_result>> done) {
  std::vector<batch_entry_result> out;
  {
    std::unique_lock guard{mtx_};
    if (auto err = take_failure("remove")) {
      guard.unlock();
      return done(*err);
    }
    for (auto& r : receipts) {
      batch_entry_result res{r};
      if (std::find(refused_.begin(), refused_.end(), r) != refused_.end()) {
        res.failed = true;
        res.error = error::make_permanent("ReceiptHandleIsInvalid", "refused by the test");
      } else if (auto i = receipt_to_id_.find(r); i != receipt_to_id_.end()) {
        auto& e = entries_.at(i->second);
        // A stale receipt (the message was received again since) deletes nothing.
        if (e.msg.receipt == r && !e.deleted) {
          e.deleted = true;
          deleted_.push_back(e.msg.id);
        }
      }
      out.push_back(std::move(res));
    }
  }
  done(std::move(out));
}

void fake_queue::change_visibility(std::vector<visibility_change> changes,
                                   callback<std::vector<batch_entry_result>> done) {
  std::vector<batch_entry_result> out;
  std::optional<error> failure;
  {
    std::lock_guard guard{mtx_};
    failure = take_failure("change_visibility");
    if (!failure) {
      for (auto& c : changes) {
        if (c.timeout.count() < 0 || c.timeout.count() > 43200)
          violations_.push_back("visibility timeout out of range: " + std::to_string(c.timeout.count()));
        visibility_calls_.push_back(c);
        batch_entry_result res{c.receipt};
        if (std::find(refused_.begin(), refused_.end(), c.receipt) != refused_.end()) {
          res.failed = true;
          res.error = error::make_permanent("ReceiptHandleIsInvalid", "refused by the test");
        } else if (auto i = receipt_to_id_.find(c.receipt); i != receipt_to_id_.end()) {
          auto& e = entries_.at(i->second);
          if (e.msg.receipt == c.receipt && !e.deleted) {
            e.last_visibility = c.timeout;
            e.visible = c.timeout.count() == 0;
          }
        }
        out.push_back(std::move(res));
      }
      // Held: the change is made, its answer is lost until unhold().
      if (maybe_hold("change_visibility", [done, out] { done(out); }))
        return;
    }
  }
  if (failure)
    return done(*failure);
  done(std::move(out));
}

void fake_queue::send(std::vector<outgoing_message> messages, callback<std::vector<batch_entry_result>> done) {
  std::optional<error> failure;
  {
    std::lock_guard guard{mtx_};
    failure = take_failure("send");
  }
  if (failure)
    return done(*failure);
  std::vector<batch_entry_result> out;
  for (auto& m : messages) {
    {
      std::lock_guard guard{mtx_};
      if (auto i = std::find(refused_sends_.begin(), refused_sends_.end(), m.body); i != refused_sends_.end()) {
        refused_sends_.erase(i);
        batch_entry_result res{"refused"};
        res.failed = true;
        res.error = error::make_transient("InternalError", "entry refused by the test");
        out.push_back(std::move(res));
        continue;
      }
    }
    auto id = push(m.body);
    std::lock_guard guard{mtx_};
    sent_.push_back(m.body);
    sent_priorities_[m.body] = m.priority;
    out.push_back(batch_entry_result{id});
  }
  done(std::move(out));
}

void fake_queue::refuse_next_send(const std::string& body) {
  std::lock_guard guard{mtx_};
  refused_sends_.push_back(body);
}

void fake_queue::stats(callback<queue_stats> done) {
  result<queue_stats> r = queue_stats{};
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("stats")) {
      r = *err;
    } else {
      for (auto& [id, e] : entries_)
        if (!e.deleted)
          (e.visible ? r->visible : r->in_flight)++;
    }
  }
  done(std::move(r));
}

void fake_queue::refuse_receipt(const std::string& receipt) {
  std::lock_guard guard{mtx_};
  refused_.push_back(receipt);
}

std::vector<std::string> fake_queue::deleted_ids() {
  std::lock_guard guard{mtx_};
  return deleted_;
}

std::vector<visibility_change> fake_queue::visibility_calls() {
  std::lock_guard guard{mtx_};
  return visibility_calls_;
}

std::vector<int> fake_queue::receive_sizes() {
  std::lock_guard guard{mtx_};
  return receive_sizes_;
}

std::vector<std::string> fake_queue::sent_bodies() {
  std::lock_guard guard{mtx_};
  return sent_;
}

int32_t fake_queue::sent_priority(const std::string& body) {
  std::lock_guard guard{mtx_};
  auto i = sent_priorities_.find(body);
  return i == sent_priorities_.end() ? -1 : i->second;
}

size_t fake_queue::pending_receives() {
  std::lock_guard guard{mtx_};
  return waiting_.size();
}

std::vector<std::string> fake_queue::violations() {
  std::lock_guard guard{mtx_};
  return violations_;
}

// -- fake_store ---------------------------------------------------------------

void fake_store::get(std::string key, size_t max_bytes, callback<std::string> done) {
  result<std::string> r = error::make_permanent("storage.not_found", "no object " + key);
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("get"))
      r = *err;
    else if (auto i = objects_.find(key); i != objects_.end())
      r = i->second.size() > max_bytes ? result<std::string>{error::make_permanent("storage.too_large", key)}
                                       : result<std::string>{i->second};
    if (maybe_hold("get", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_store::put(std::string key, std::string bytes, std::string, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("put")) {
      r = *err;
    } else {
      objects_[key] = std::move(bytes);
      ++puts_;
    }
    // Held: the object is written, its answer waits until unhold().
    if (maybe_hold("put", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_store::exists(std::string key, callback<bool> done) {
  bool found;
  {
    std::lock_guard guard{mtx_};
    found = objects_.count(key) > 0;
  }
  done(found);
}

void fake_store::set(const std::string& key, std::string bytes) {
  std::lock_guard guard{mtx_};
  objects_[key] = std::move(bytes);
}

std::optional<std::string> fake_store::object(const std::string& key) {
  std::lock_guard guard{mtx_};
  if (auto i = objects_.find(key); i != objects_.end())
    return i->second;
  return std::nullopt;
}

int fake_store::puts() {
  std::lock_guard guard{mtx_};
  return puts_;
}

// -- fake_repository ------------------------------------------------------------

uuid fake_repository::add(const std::string& file_path, const std::string& mime_type, int attempts) {
  std::lock_guard guard{mtx_};
  fake_row row;
  row.ingestion.ingestion_id = uuid::v7();
  row.ingestion.document_id = uuid::v7();
  row.ingestion.tenant_id = uuid::v7();
  row.ingestion.file_path = file_path;
  row.ingestion.mime_type = mime_type;
  row.ingestion.attempt_count = attempts;
  auto id = row.ingestion.ingestion_id;
  rows_.emplace(id, std::move(row));
  return id;
}

bool fake_repository::fenced(const lease_ref& ref) const {
  auto i = rows_.find(ref.ingestion_id);
  return i != rows_.end() && i->second.status == "in-progress" && i->second.token
         && *i->second.token == ref.claim_token;
}

void fake_repository::claim(std::vector<claim_request> requests, std::string, std::chrono::seconds lease,
                            callback<std::vector<std::optional<claimed_ingestion>>> done) {
  result<std::vector<std::optional<claimed_ingestion>>> r = std::vector<std::optional<claimed_ingestion>>{};
  {
    std::lock_guard guard{mtx_};
    if (lease.count() <= 0)
      violations_.push_back("claim with a lease of " + std::to_string(lease.count()) + " s");
    if (auto err = take_failure("claim")) {
      r = *err;
    } else {
      for (auto& req : requests) {
        auto i = rows_.find(req.ingestion_id);
        if (i == rows_.end() || i->second.status != "in-progress" || i->second.lease_live) {
          r->push_back(std::nullopt);
          continue;
        }
        if (i->second.token) {
          // The lease expired with the token set: its holder crashed, and that counts.
          auto& row = i->second;
          row.ingestion.attempt_count++;
          row.last_error = "worker.crash: a claim expired without an outcome or give-back";
          if (row.ingestion.attempt_count >= std::max(req.max_attempts, 1)) {
            row.status = "failed";
            row.error_class = "poison";
            row.last_error = "poison: a claim expired without an outcome or give-back";
            row.token.reset();
            // Said once, to this claimer: a later claim finds it finished (nullopt).
            auto c = row.ingestion;
            c.claim_token = uuid{};
            c.poisoned = true;
            r->push_back(c);
            continue;
          }
          // Size classes: the crash moves a small ingestion to the large class (migration 011).
          if (req.crash_escalates && row.ingestion.size_class == "small") {
            row.ingestion.size_class = "large";
            row.ingestion.class_attempts_base = row.ingestion.attempt_count;
          }
        }
        i->second.token = req.claim_token;
        i->second.lease_live = true;
        auto c = i->second.ingestion;
        c.claim_token = req.claim_token;
        c.transcription_file_path = i->second.transcription_file_path;
        r->push_back(c);
      }
    }
    if (maybe_hold("claim", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_repository::states(std::vector<uuid> ids, callback<std::vector<ingestion_state>> done) {
  std::vector<ingestion_state> out;
  {
    std::lock_guard guard{mtx_};
    for (auto& id : ids) {
      auto i = rows_.find(id);
      if (i == rows_.end())
        out.push_back(ingestion_state::unknown);
      else if (i->second.status == "completed")
        out.push_back(ingestion_state::completed);
      else if (i->second.status == "failed")
        out.push_back(ingestion_state::failed);
      else if (i->second.status == "cancelled")
        out.push_back(ingestion_state::cancelled);
      else
        out.push_back(i->second.lease_live ? ingestion_state::held : ingestion_state::claimable);
    }
  }
  done(std::move(out));
}

void fake_repository::record_transcription(lease_ref ref, transcription_record record, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("record_transcription"))
      r = *err;
    else if (!fenced(ref))
      r = error::make_claim_lost("record_transcription fenced out");
    else
      rows_.at(ref.ingestion_id).transcription_file_path = record.transcription_file_path;
    if (maybe_hold("record_transcription", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_repository::complete(std::vector<completion> completions, callback<std::vector<result<void>>> done) {
  result<std::vector<result<void>>> r = std::vector<result<void>>{};
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("complete")) {
      r = *err;
    } else {
      for (auto& c : completions) {
        if (!fenced(c.ref)) {
          r->push_back(error::make_claim_lost("complete fenced out"));
          continue;
        }
        auto& row = rows_.at(c.ref.ingestion_id);
        row.status = "completed";
        row.structured_data = c.record.structured_data;
        if (!c.record.review_reason.empty())
          row.last_error = c.record.review_reason;
        row.token.reset();
        row.lease_live = false;
        row.completions++;
        r->push_back(result<void>{});
      }
    }
    if (maybe_hold("complete", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_repository::record_failure(lease_ref ref, failure_record record, std::chrono::seconds,
                                     callback<failure_outcome> done) {
  result<failure_outcome> r = failure_outcome{};
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("record_failure")) {
      r = *err;
    } else if (!fenced(ref)) {
      r = error::make_claim_lost("record_failure fenced out");
    } else {
      auto& row = rows_.at(ref.ingestion_id);
      row.ingestion.attempt_count++;
      row.last_error = record.error.describe();
      row.error_class = std::string{to_string(record.error.cls)};
      row.token.reset();
      row.lease_live = false;
      bool final = !record.escalate
                   && (record.error.permanent() || row.ingestion.attempt_count >= record.max_attempts);
      if (record.escalate) {
        row.ingestion.size_class = "large";
        row.ingestion.class_attempts_base = row.ingestion.attempt_count;
      }
      if (final) {
        row.status = "failed";
        row.structured_data = record.structured_data;
      }
      r = failure_outcome{row.ingestion.attempt_count, final};
    }
  }
  done(r);
}

void fake_repository::renew_leases(std::vector<lease_ref> refs, std::chrono::seconds,
                                   callback<std::vector<lease_ref>> done) {
  std::vector<lease_ref> lost;
  {
    std::lock_guard guard{mtx_};
    renew_batches_.push_back(refs.size());
    for (auto& ref : refs)
      if (!fenced(ref))
        lost.push_back(ref);
    // Held: the answer (as of this call) is lost until unhold().
    if (maybe_hold("renew_leases", [done, lost] { done(lost); }))
      return;
  }
  done(std::move(lost));
}

void fake_repository::release(lease_ref ref, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (!fenced(ref)) {
      r = error::make_claim_lost("release fenced out");
    } else {
      auto& row = rows_.at(ref.ingestion_id);
      row.token.reset();
      row.lease_live = false;
    }
  }
  done(r);
}

void fake_repository::cancel_requests(std::vector<uuid> ids, callback<std::vector<uuid>> done) {
  std::vector<uuid> out;
  {
    std::lock_guard guard{mtx_};
    for (auto& id : ids)
      if (auto i = rows_.find(id); i != rows_.end() && i->second.cancel_requested
                                   && i->second.status == "in-progress")
        out.push_back(id);
  }
  done(std::move(out));
}

void fake_repository::record_cancelled(lease_ref ref, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("record_cancelled")) {
      r = *err;
    } else if (!fenced(ref)) {
      r = error::make_claim_lost("record_cancelled fenced out");
    } else {
      auto& row = rows_.at(ref.ingestion_id);
      row.status = "cancelled";
      row.token.reset();
      row.lease_live = false;
    }
  }
  done(r);
}

void fake_repository::request_cancel(const uuid& id) {
  std::lock_guard guard{mtx_};
  auto& row = rows_.at(id);
  if (row.status != "in-progress")
    return;
  if (row.lease_live)
    row.cancel_requested = true;
  else
    row.status = "cancelled";
}

void fake_repository::append_events(std::vector<audit_event> events, callback<void> done) {
  {
    std::lock_guard guard{mtx_};
    for (auto& e : events) {
      if (e.step.empty() || e.outcome.empty())
        violations_.push_back("audit event without step or outcome");
      events_.push_back(std::move(e));
    }
  }
  done(result<void>{});
}

void fake_repository::rescue_stranded(std::chrono::seconds stale_threshold, int limit,
                                      callback<std::vector<stranded_ingestion>> done) {
  result<std::vector<stranded_ingestion>> r = std::vector<stranded_ingestion>{};
  {
    std::lock_guard guard{mtx_};
    if (stale_threshold.count() <= 0 || limit < 1)
      violations_.push_back("rescue_stranded with a threshold of " + std::to_string(stale_threshold.count())
                            + " s and a limit of " + std::to_string(limit));
    rescue_calls_.push_back(stale_threshold);
    if (auto err = take_failure("rescue_stranded")) {
      r = *err;
    } else if (!sweep_lock_elsewhere_) {
      for (auto& [id, row] : rows_)
        if (row.status == "in-progress" && !row.lease_live && static_cast<int>(r->size()) < limit)
          r->push_back({id, row.ingestion.size_class, row.priority});
    }
    if (maybe_hold("rescue_stranded", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_repository::hold_sweep_lock_elsewhere(bool held) {
  std::lock_guard guard{mtx_};
  sweep_lock_elsewhere_ = held;
}

std::vector<std::chrono::seconds> fake_repository::rescue_calls() {
  std::lock_guard guard{mtx_};
  return rescue_calls_;
}

fake_row fake_repository::row(const uuid& id) {
  std::lock_guard guard{mtx_};
  return rows_.at(id);
}

void fake_repository::steal_claim(const uuid& id) {
  std::lock_guard guard{mtx_};
  auto& row = rows_.at(id);
  row.token = uuid::v7();
  row.lease_live = true;
}

void fake_repository::hold_by_other(const uuid& id) { steal_claim(id); }

void fake_repository::set_size_class(const uuid& id, const std::string& size_class) {
  std::lock_guard guard{mtx_};
  rows_.at(id).ingestion.size_class = size_class;
}

void fake_repository::set_priority(const uuid& id, int32_t priority) {
  std::lock_guard guard{mtx_};
  rows_.at(id).priority = priority;
}

void fake_repository::choose_providers(const uuid& id, const std::string& transcription,
                                       const std::string& extraction) {
  std::lock_guard guard{mtx_};
  rows_.at(id).ingestion.transcription_provider = transcription;
  rows_.at(id).ingestion.extraction_provider = extraction;
}

void fake_repository::crash_holder(const uuid& id) {
  std::lock_guard guard{mtx_};
  auto& row = rows_.at(id);
  if (!row.token || !row.lease_live)
    violations_.push_back("crash_holder on an ingestion nobody holds");
  row.lease_live = false;
}

std::vector<audit_event> fake_repository::events() {
  std::lock_guard guard{mtx_};
  return events_;
}

int fake_repository::renew_calls() {
  std::lock_guard guard{mtx_};
  return static_cast<int>(renew_batches_.size());
}

std::vector<size_t> fake_repository::renew_batch_sizes() {
  std::lock_guard guard{mtx_};
  return renew_batches_;
}

std::vector<std::string> fake_repository::violations() {
  std::lock_guard guard{mtx_};
  return violations_;
}

// -- fake_transcriber / fake_extractor --------------------------------------------

void fake_transcriber::transcribe(transcription_request request, callback<transcription> done) {
  result<transcription> r = transcription{};
  {
    std::lock_guard guard{mtx_};
    ++calls_;
    if (auto err = take_failure("transcribe")) {
      r = *err;
    } else {
      auto& t = *r;
      t.text = request.bytes;
      t.pages.push_back(transcription_page{1, request.bytes, 0.95, {}});
      t.page_count = 1;
      t.quality_score = 0.95;
      t.provider = name_;
    }
    if (cpu_) {
      waiting_.push_back(waiting{std::move(request.started), std::move(done), std::move(r)});
      return;
    }
    if (maybe_hold("transcribe", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_transcriber::wait_for_cpu(bool on) {
  std::lock_guard guard{mtx_};
  cpu_ = on;
}

void fake_transcriber::start_waiting() {
  std::vector<waiting> now;
  {
    std::lock_guard guard{mtx_};
    now.swap(waiting_);
  }
  for (auto& w : now) {
    if (w.started)
      w.started();
    w.done(std::move(w.answer));
  }
}

void fake_transcriber::expire_waiting() {
  std::vector<waiting> now;
  {
    std::lock_guard guard{mtx_};
    now.swap(waiting_);
  }
  for (auto& w : now)
    w.done(error::make_transient("ocr.busy", "no CPU worker was free within the document deadline"));
}

int fake_transcriber::calls() {
  std::lock_guard guard{mtx_};
  return calls_;
}

extraction fake_extractor::valid_invoice() {
  extraction x;
  x.structured_data = R"({"invoice_number":"INV-1","invoice_date":"2026-01-15","due_date":null,)"
                      R"("supplier_name":"ACME GmbH","supplier_address":null,"supplier_vat_id":null,)"
                      R"("customer_name":null,"currency":"EUR","line_items":[],"subtotal":100.0,)"
                      R"("vat_amount":19.0,"total":119.0,"extraction_successful":true,)"
                      R"("confidence":"high","missing_fields":[]})";
  x.extraction_successful = true;
  x.confidence = "high";
  x.model = "fake";
  return x;
}

void fake_extractor::extract(std::string, callback<extraction> done) {
  result<extraction> r = next_result;
  {
    std::lock_guard guard{mtx_};
    ++calls_;
    if (auto err = take_failure("extract"))
      r = *err;
    if (maybe_hold("extract", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_extractor::extract_with(std::string text, call_context context, callback<extraction> done) {
  {
    std::lock_guard guard{mtx_};
    hooks_ = std::move(context);
  }
  extract(std::move(text), std::move(done));
}

call_context fake_extractor::last_context() {
  std::lock_guard guard{mtx_};
  return hooks_;
}

int fake_extractor::calls() {
  std::lock_guard guard{mtx_};
  return calls_;
}

} // namespace ingestd::test
