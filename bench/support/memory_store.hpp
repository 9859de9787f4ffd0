// Storage in memory for the benchmarks: what is written is kept; a key never written reads from
// the benchmark's `fallback` (its documents), else is not found.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/storage/object_store.hpp"
#include "messages/error_codes.hpp"

namespace ingestd::bench {

class memory_store : public object_store {
public:
  using fallback_fn = std::function<std::optional<std::string>(const std::string& key)>;

  explicit memory_store(fallback_fn fallback) : fallback_(std::move(fallback)) {}

  void get(std::string key, size_t, callback<std::string> done) override {
    {
      std::lock_guard g{mtx_};
      if (auto it = objects_.find(key); it != objects_.end()) {
        auto copy = it->second;
        return done(std::move(copy));
      }
    }
    if (auto bytes = fallback_(key))
      return done(std::move(*bytes));
    done(error::make_permanent(errc::storage_not_found, "no object " + key));
  }

  void put(std::string key, std::string bytes, std::string, callback<void> done) override {
    {
      std::lock_guard g{mtx_};
      objects_[std::move(key)] = std::move(bytes);
    }
    done(result<void>{});
  }

  void exists(std::string key, callback<bool> done) override {
    bool found;
    {
      std::lock_guard g{mtx_};
      found = objects_.count(key) > 0;
    }
    done(found);
  }

  void remove(std::string key, callback<void> done) override {
    {
      std::lock_guard g{mtx_};
      objects_.erase(key);
    }
    done(result<void>{});
  }

  void list(std::string prefix, callback<std::vector<std::string>> done) override {
    std::vector<std::string> keys;
    {
      std::lock_guard g{mtx_};
      for (auto it = objects_.lower_bound(prefix);
           it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
        keys.push_back(it->first);
    }
    done(std::move(keys));
  }

  std::string name() const override { return "memory"; }

private:
  fallback_fn fallback_;
  std::mutex mtx_;
  std::map<std::string, std::string> objects_;
};

} // namespace ingestd::bench
