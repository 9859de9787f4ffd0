// Blocking storage calls shared by erasure and pruning: each call waits for the store's answer
// within `timeout` (the callers run on threads of their own, never on an actor's).
#pragma once

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "adapters/storage/object_store.hpp"

namespace ingestd::objects {

result<std::vector<std::string>> list(object_store& store, const std::string& prefix,
                                      std::chrono::milliseconds timeout);

/// Removes the keys (skipping any the key rules refuse: ingestd never wrote them); answers how
/// many there were.
result<int64_t> remove(object_store& store, const std::set<std::string>& keys,
                       std::chrono::milliseconds timeout);

} // namespace ingestd::objects
