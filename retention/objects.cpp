#include "retention/objects.hpp"

#include "adapters/support/blocking_call.hpp"

namespace ingestd::objects {

result<std::vector<std::string>> list(object_store& store, const std::string& prefix,
                                      std::chrono::milliseconds timeout) {
  return blocking_call<std::vector<std::string>>(
      timeout, "storage.timeout", "listing " + prefix,
      [&](auto cb) { store.list(prefix, std::move(cb)); });
}

result<int64_t> remove(object_store& store, const std::set<std::string>& keys,
                       std::chrono::milliseconds timeout) {
  for (const auto& key : keys) {
    if (!storage_keys::validate_key(key))
      continue;
    auto removed = blocking_call<void>(timeout, "storage.timeout", "removing " + key,
                                       [&](auto cb) { store.remove(key, std::move(cb)); });
    if (!removed)
      return removed.error();
  }
  return static_cast<int64_t>(keys.size());
}

} // namespace ingestd::objects
