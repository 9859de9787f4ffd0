// A node's copy of what the database says about each tenant (a tenant's month of use for its
// budget, what reviewers did with its extracted values), reused for a set time: the first call
// after the copy is too old reads again, and the calls that arrive meanwhile wait for that one
// read instead of sending their own. A failed read is not kept: the next call reads again.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

template <class T>
class tenant_cache {
public:
  using clock_fn = std::function<std::chrono::steady_clock::time_point()>;
  /// Reads a tenant's value; may answer on the caller's thread or another one.
  using read_fn = std::function<void(const uuid&, callback<T>)>;

  tenant_cache(std::chrono::seconds max_age, read_fn read, clock_fn clock = {})
      : state_(std::make_shared<state>()) {
    state_->max_age = max_age;
    state_->read = std::move(read);
    state_->clock = clock ? std::move(clock) : [] { return std::chrono::steady_clock::now(); };
  }

  std::chrono::seconds max_age() const { return state_->max_age; }

  /// The tenant's value, from the copy when it is recent enough, else from a read. `done` runs
  /// on the caller's thread or the reader's.
  void get(const uuid& tenant, callback<T> done) const {
    std::unique_lock lock{state_->mtx};
    auto& e = state_->entries[tenant];
    if (e.read && state_->clock() - e.read_at < state_->max_age) {
      T copy = e.value;
      lock.unlock();
      return done(std::move(copy));
    }
    e.waiting.push_back(std::move(done));
    if (e.reading)
      return;
    e.reading = true;
    lock.unlock();
    state_->read(tenant, [s = state_, tenant](result<T> r) { answer(*s, tenant, std::move(r)); });
  }

private:
  struct entry {
    T value{};
    std::chrono::steady_clock::time_point read_at{};
    bool read = false;
    bool reading = false;
    std::vector<callback<T>> waiting;
  };
  struct state {
    std::chrono::seconds max_age{};
    read_fn read;
    clock_fn clock;
    std::mutex mtx;
    std::map<uuid, entry> entries;
  };

  static void answer(state& s, const uuid& tenant, result<T> r) {
    std::vector<callback<T>> waiting;
    {
      std::lock_guard lock{s.mtx};
      auto& e = s.entries[tenant];
      e.reading = false;
      waiting.swap(e.waiting);
      if (r) {
        e.value = *r;
        e.read_at = s.clock();
        e.read = true;
      }
    }
    for (auto& w : waiting)
      w(r);
  }

  std::shared_ptr<state> state_;
};

} // namespace ingestd
