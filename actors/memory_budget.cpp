// The node's memory budget: reservations granted in arrival order.
#include "actors/memory_budget.hpp"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace ingestd {

memory_budget::reservation::~reservation() {
  if (auto b = budget_.lock())
    b->give_back(bytes_);
}

memory_budget::memory_budget(uint64_t total) : total_(std::max<uint64_t>(total, 1)) {}

bool memory_budget::fits(uint64_t bytes) const {
  return bytes > total_ ? reserved_ == 0 : reserved_ + bytes <= total_;
}

bool memory_budget::reserve(uint64_t bytes, granted done, const std::stop_token& stop) {
  uint64_t id = 0;
  granted now;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (waiting_.empty() && fits(bytes)) {
      reserved_ += bytes;
      now = std::move(done);
    } else {
      id = ++next_id_;
      waiting_.push_back({id, bytes, std::move(done), nullptr});
    }
  }
  if (now) {
    now(std::make_shared<reservation>(weak_from_this(), bytes));
    return true;
  }
  if (stop.stop_possible()) {
    // Made outside the lock: a stop already requested runs the withdrawal here and now.
    auto on_stop = std::make_unique<std::stop_callback<std::function<void()>>>(
        stop, std::function<void()>{[weak = weak_from_this(), id] {
          if (auto b = weak.lock())
            b->withdraw(id);
        }});
    std::unique_lock<std::mutex> lock{mtx_};
    auto i = std::find_if(waiting_.begin(), waiting_.end(),
                          [id](const waiter& w) { return w.id == id; });
    if (i != waiting_.end()) {
      i->on_stop = std::move(on_stop);
      return false;
    }
    lock.unlock(); // granted or withdrawn meanwhile: the callback goes, outside the lock
  }
  return false;
}

void memory_budget::withdraw(uint64_t id) {
  std::optional<waiter> gone;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto i = std::find_if(waiting_.begin(), waiting_.end(),
                          [id](const waiter& w) { return w.id == id; });
    if (i == waiting_.end())
      return;
    gone = std::move(*i);
    waiting_.erase(i);
  }
  gone->done(nullptr);
  // Those behind it may fit now.
  give_back(0);
}

void memory_budget::give_back(uint64_t bytes) {
  std::vector<waiter> ready;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    reserved_ -= std::min(bytes, reserved_);
    // The head first, and only while it fits: a small request never overtakes a large one.
    while (!waiting_.empty() && fits(waiting_.front().bytes)) {
      reserved_ += waiting_.front().bytes;
      ready.push_back(std::move(waiting_.front()));
      waiting_.pop_front();
    }
  }
  // Outside the lock: a grant may give back at once (its requester is gone).
  for (auto& w : ready)
    w.done(std::make_shared<reservation>(weak_from_this(), w.bytes));
}

uint64_t memory_budget::reserved() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return reserved_;
}

size_t memory_budget::waiting() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return waiting_.size();
}

} // namespace ingestd
