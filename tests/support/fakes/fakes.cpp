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
      violations_.push_back("receive of " + std::to_string(max_messages)
                            + " messages (1-10 allowed)");
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

void fake_queue::remove(std::vector<std::string> receipts,
                        callback<std::vector<batch_entry_result>> done) {
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
          violations_.push_back("visibility timeout out of range: "
                                + std::to_string(c.timeout.count()));
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

void fake_queue::send(std::vector<outgoing_message> messages,
                      callback<std::vector<batch_entry_result>> done) {
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
      if (auto i = std::find(refused_sends_.begin(), refused_sends_.end(), m.body);
          i != refused_sends_.end()) {
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
      r = i->second.size() > max_bytes
              ? result<std::string>{error::make_permanent("storage.too_large", key)}
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

void fake_store::remove(std::string key, callback<void> done) {
  {
    std::lock_guard guard{mtx_};
    objects_.erase(key);
  }
  done(unit{});
}

void fake_store::list(std::string prefix, callback<std::vector<std::string>> done) {
  std::vector<std::string> keys;
  {
    std::lock_guard guard{mtx_};
    for (auto i = objects_.lower_bound(prefix);
         i != objects_.end() && i->first.compare(0, prefix.size(), prefix) == 0; ++i)
      keys.push_back(i->first);
  }
  done(std::move(keys));
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
    w.done(
        error::make_transient("ocr.busy", "no CPU worker was free within the document deadline"));
}

int fake_transcriber::calls() {
  std::lock_guard guard{mtx_};
  return calls_;
}

extraction fake_extractor::valid_invoice() {
  extraction x;
  x.structured_data
      = R"({"invoice_number":"INV-1","invoice_date":"2026-01-15","due_date":null,)"
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

void fake_extractor::extract_with(std::string text, call_context context,
                                  callback<extraction> done) {
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
