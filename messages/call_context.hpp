// What a port call carries from its caller beside its arguments: hooks that stop the caller's
// deadline while the call waits for a shared resource that is not the work itself (a provider's
// rate limit), and the fields of the caller's log lines, so that an adapter's lines about the call
// name the job it serves (node, stage, step, ingestion, document, tenant).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "messages/error_codes.hpp"

namespace ingestd {

/// A log field of the caller (adapters/support/log.hpp writes it as a field of the line).
struct context_field {
  std::string key;
  std::string value;
  /// Written unquoted in JSON.
  bool number = false;
};

/// Every member may be empty. The hooks are called from any thread, in pairs (`waiting` before
/// its `resumed`), any number of times for one call (each retry may wait again).
struct call_context {
  /// The call waits for the resource: the caller's deadline stops.
  std::function<void()> waiting;
  /// It goes on: the caller's deadline runs again, from the start.
  std::function<void()> resumed;
  /// The caller's log fields, for every line the adapter writes about this call: shared by the
  /// call and each of its requests, which copy the context (none when null).
  std::shared_ptr<const std::vector<context_field>> log_fields;

  const std::vector<context_field>& fields() const {
    static const std::vector<context_field> none;
    return log_fields ? *log_fields : none;
  }
};

/// True for the error of a request that waited the longest wait for its provider's limits and
/// was never sent ("provider.busy", transient; adapters/http/rate_limited_client): the provider's
/// line was full, nothing is wrong with the work.
inline bool provider_busy(const error& err) {
  return err.code == errc::provider_busy;
}

} // namespace ingestd
