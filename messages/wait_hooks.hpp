// What a piece of work tells its caller while it waits for a shared resource that is not the
// work itself (a provider's rate limit): a job's step deadline stops while it waits.
#pragma once

#include <functional>

#include "messages/error.hpp"

namespace ingestd {

/// Either may be empty. Called from any thread, in pairs (`waiting` before its `resumed`), any
/// number of times for one request (each retry may wait again).
struct wait_hooks {
  /// The work waits for the resource: the caller's deadline stops.
  std::function<void()> waiting;
  /// It goes on: the caller's deadline runs again, from the start.
  std::function<void()> resumed;
};

/// True for the error of a request that waited the longest wait for its provider's limits and
/// was never sent ("provider.busy", transient; adapters/http/rate_limited_client): the provider's
/// line was full, nothing is wrong with the work.
inline bool provider_busy(const error& err) { return err.code == "provider.busy"; }

} // namespace ingestd
