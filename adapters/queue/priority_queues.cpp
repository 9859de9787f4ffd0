// priority_queues: one queue per priority class, polled with weights (see the header).
#include "adapters/queue/priority_queues.hpp"

#include <algorithm>
#include <stdexcept>

namespace ingestd {

namespace {

using clock_type = std::chrono::steady_clock;

/// An empty round waits this long on its starting class before going round again.
constexpr std::chrono::seconds round_wait{1};

std::string tag(size_t cls, const std::string& receipt) {
  return std::to_string(cls) + "|" + receipt;
}

/// The class and the inner receipt of a tagged receipt; nullopt when it is not one of ours.
std::optional<std::pair<size_t, std::string>> untag(const std::string& receipt, size_t classes) {
  auto bar = receipt.find('|');
  if (bar == std::string::npos || bar == 0 || bar > 3)
    return std::nullopt;
  size_t cls = 0;
  for (size_t i = 0; i < bar; ++i) {
    if (receipt[i] < '0' || receipt[i] > '9')
      return std::nullopt;
    cls = cls * 10 + static_cast<size_t>(receipt[i] - '0');
  }
  if (cls >= classes)
    return std::nullopt;
  return std::pair{cls, receipt.substr(bar + 1)};
}

batch_entry_result invalid_receipt(const std::string& ref) {
  batch_entry_result r;
  r.ref = ref;
  r.failed = true;
  r.error = error::make_permanent("queue.ReceiptHandleIsInvalid",
                                  "not a receipt of this queue: " + ref);
  return r;
}

/// Calls `call(class, indices)` once per class that has entries, and answers `done` with every
/// entry's result in the original order once all have answered.
template <class Call>
void fan_out(size_t classes, const std::vector<std::optional<size_t>>& class_of_entry,
             std::vector<batch_entry_result>&& prefilled,
             callback<std::vector<batch_entry_result>>&& done, Call call) {
  std::vector<std::vector<size_t>> groups(classes);
  for (size_t i = 0; i < class_of_entry.size(); ++i)
    if (class_of_entry[i])
      groups[*class_of_entry[i]].push_back(i);
  struct shared {
    std::mutex mtx;
    std::vector<batch_entry_result> out;
    size_t pending = 0;
    callback<std::vector<batch_entry_result>> done;
  };
  auto s = std::make_shared<shared>();
  s->out = std::move(prefilled);
  s->done = std::move(done);
  for (auto& g : groups)
    if (!g.empty())
      ++s->pending;
  if (s->pending == 0)
    return s->done(std::move(s->out));
  for (size_t c = 0; c < classes; ++c) {
    if (groups[c].empty())
      continue;
    call(c, groups[c], [s, idx = groups[c]](result<std::vector<batch_entry_result>> r) {
      bool last = false;
      {
        std::lock_guard guard{s->mtx};
        for (size_t k = 0; k < idx.size(); ++k) {
          auto& slot = s->out[idx[k]];
          if (!r) {
            slot.failed = true;
            slot.error = r.error();
          } else if (k < r->size()) {
            auto ref = slot.ref;
            slot = (*r)[k];
            if (!ref.empty())
              slot.ref = ref; // the caller's (tagged) receipt
          } else {
            slot.failed = true;
            slot.error
                = error::make_transient("queue.no_result", "the class queue answered no entry");
          }
        }
        last = --s->pending == 0;
      }
      if (last)
        s->done(std::move(s->out));
    });
  }
}

} // namespace

struct priority_queues::poll {
  int max_messages = 1;
  std::chrono::seconds visibility{0};
  clock_type::time_point deadline;
  std::vector<size_t> order;
  std::optional<error> last_error;
  bool any_answered = false;
  callback<std::vector<queue_message>> done;
};

priority_queues::priority_queues(std::vector<priority_class> classes)
    : classes_(std::move(classes)) {
  std::vector<int64_t> bounds, weights;
  for (auto& c : classes_) {
    bounds.push_back(c.max_priority);
    weights.push_back(c.weight);
    if (!c.q)
      throw std::invalid_argument("priority_queues: a class without a queue");
  }
  if (auto why = check_priority_classes(bounds, weights))
    throw std::invalid_argument("priority_queues: expected " + *why);
  credit_.assign(classes_.size(), 0);
}

size_t priority_queues::class_of(int32_t priority) const {
  for (size_t i = 0; i < classes_.size(); ++i)
    if (priority <= classes_[i].max_priority)
      return i;
  return classes_.size() - 1;
}

std::vector<size_t> priority_queues::next_order() {
  // Smooth weighted round robin: every class gains its weight, the richest starts and pays the
  // total. Over sum(weights) receives each class starts weight times, evenly spread.
  size_t first = 0;
  {
    std::lock_guard guard{mtx_};
    int64_t total = 0;
    for (size_t i = 0; i < classes_.size(); ++i) {
      credit_[i] += classes_[i].weight;
      total += classes_[i].weight;
      if (credit_[i] > credit_[first])
        first = i;
    }
    credit_[first] -= total;
  }
  std::vector<size_t> order{first};
  for (size_t i = 0; i < classes_.size(); ++i)
    if (i != first)
      order.push_back(i);
  return order;
}

void priority_queues::receive(int max_messages, std::chrono::seconds wait,
                              std::chrono::seconds visibility,
                              callback<std::vector<queue_message>> done) {
  auto p = std::make_shared<poll>();
  p->max_messages = max_messages;
  p->visibility = visibility;
  p->deadline = clock_type::now() + wait;
  p->order = next_order();
  p->done = std::move(done);
  try_class(p, 0);
}

void priority_queues::try_class(const std::shared_ptr<poll>& p, size_t i) {
  if (i == p->order.size()) {
    if (!p->any_answered && p->last_error)
      return p->done(*p->last_error);
    auto left = std::chrono::duration_cast<std::chrono::seconds>(p->deadline - clock_type::now());
    if (left.count() <= 0)
      return p->done(std::vector<queue_message>{});
    // All empty: wait on the starting class a little, then go round again.
    auto cls = p->order.front();
    auto wait = std::min(left, round_wait);
    return classes_[cls].q->receive(
        p->max_messages, wait, p->visibility, [this, p, cls](result<std::vector<queue_message>> r) {
          if (r && !r->empty()) {
            for (auto& m : *r) {
              m.receipt = tag(cls, m.receipt);
              m.priority = cls == 0 ? min_priority : classes_[cls - 1].max_priority + 1;
            }
            return p->done(std::move(*r));
          }
          if (!r)
            p->last_error = r.error();
          p->any_answered = p->any_answered || static_cast<bool>(r);
          if (clock_type::now() >= p->deadline)
            return r ? p->done(std::vector<queue_message>{}) : p->done(r.error());
          p->order = next_order();
          try_class(p, 0);
        });
  }
  auto cls = p->order[i];
  classes_[cls].q->receive(p->max_messages, std::chrono::seconds{0}, p->visibility,
                           [this, p, cls, i](result<std::vector<queue_message>> r) {
                             if (r && !r->empty()) {
                               for (auto& m : *r) {
                                 m.receipt = tag(cls, m.receipt);
                                 m.priority
                                     = cls == 0 ? min_priority : classes_[cls - 1].max_priority + 1;
                               }
                               return p->done(std::move(*r));
                             }
                             if (!r)
                               p->last_error = r.error();
                             else
                               p->any_answered = true;
                             try_class(p, i + 1);
                           });
}

void priority_queues::remove(std::vector<std::string> receipts,
                             callback<std::vector<batch_entry_result>> done) {
  std::vector<std::optional<size_t>> cls(receipts.size());
  std::vector<std::string> inner(receipts.size());
  std::vector<batch_entry_result> out(receipts.size());
  for (size_t i = 0; i < receipts.size(); ++i) {
    out[i].ref = receipts[i];
    if (auto t = untag(receipts[i], classes_.size())) {
      cls[i] = t->first;
      inner[i] = t->second;
    } else {
      out[i] = invalid_receipt(receipts[i]);
    }
  }
  fan_out(classes_.size(), cls, std::move(out), std::move(done),
          [this, &inner](size_t c, const std::vector<size_t>& idx, auto cb) {
            std::vector<std::string> part;
            part.reserve(idx.size());
            for (auto i : idx)
              part.push_back(inner[i]);
            classes_[c].q->remove(std::move(part), std::move(cb));
          });
}

void priority_queues::change_visibility(std::vector<visibility_change> changes,
                                        callback<std::vector<batch_entry_result>> done) {
  std::vector<std::optional<size_t>> cls(changes.size());
  std::vector<batch_entry_result> out(changes.size());
  for (size_t i = 0; i < changes.size(); ++i) {
    out[i].ref = changes[i].receipt;
    if (auto t = untag(changes[i].receipt, classes_.size())) {
      cls[i] = t->first;
      changes[i].receipt = t->second;
    } else {
      out[i] = invalid_receipt(changes[i].receipt);
    }
  }
  fan_out(classes_.size(), cls, std::move(out), std::move(done),
          [this, &changes](size_t c, const std::vector<size_t>& idx, auto cb) {
            std::vector<visibility_change> part;
            part.reserve(idx.size());
            for (auto i : idx)
              part.push_back(changes[i]);
            classes_[c].q->change_visibility(std::move(part), std::move(cb));
          });
}

void priority_queues::send(std::vector<outgoing_message> messages,
                           callback<std::vector<batch_entry_result>> done) {
  std::vector<std::optional<size_t>> cls(messages.size());
  std::vector<batch_entry_result> out(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!valid_priority(messages[i].priority)) {
      out[i].failed = true;
      out[i].error
          = error::make_permanent("queue.InvalidParameterValue", "priority must be 0..100");
    } else {
      cls[i] = class_of(messages[i].priority);
    }
  }
  fan_out(classes_.size(), cls, std::move(out), std::move(done),
          [this, &messages](size_t c, const std::vector<size_t>& idx, auto cb) {
            std::vector<outgoing_message> part;
            part.reserve(idx.size());
            for (auto i : idx)
              part.push_back(messages[i]);
            classes_[c].q->send(std::move(part), std::move(cb));
          });
}

void priority_queues::stats(callback<queue_stats> done) {
  struct shared {
    std::mutex mtx;
    queue_stats sum;
    std::optional<error> failed;
    size_t pending = 0;
    callback<queue_stats> done;
  };
  auto s = std::make_shared<shared>();
  s->pending = classes_.size();
  s->done = std::move(done);
  for (auto& c : classes_)
    c.q->stats([s](result<queue_stats> r) {
      bool last = false;
      {
        std::lock_guard guard{s->mtx};
        if (!r) {
          s->failed = r.error();
        } else {
          s->sum.visible += r->visible;
          s->sum.in_flight += r->in_flight;
          s->sum.delayed += r->delayed;
          s->sum.oldest_age_seconds = std::max(s->sum.oldest_age_seconds, r->oldest_age_seconds);
        }
        last = --s->pending == 0;
      }
      if (last) {
        if (s->failed)
          s->done(*s->failed);
        else
          s->done(s->sum);
      }
    });
}

std::string priority_queues::name() const {
  return classes_.front().q->name();
}

} // namespace ingestd
