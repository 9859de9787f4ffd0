// The outbox port (DESIGN §8): rows written in the transaction that changed the state, to be sent
// at least once by the relay actor. Implemented by pg_outbox_repository.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "messages/result.hpp"

namespace ingestd {

struct outbox_row {
  int64_t id = 0;
  /// The queue (by name) the body goes to.
  std::string destination;
  std::string body;
};

/// Asynchronous like repository: every call returns at once and calls its callback exactly once
/// from a database thread.
class outbox_repository {
public:
  virtual ~outbox_repository() = default;

  /// Up to `limit` unsent rows, oldest first, held for `hold` so that another relay skips them
  /// (a relay that dies leaves them to the next once the hold ends).
  virtual void take(int limit, std::chrono::seconds hold, callback<std::vector<outbox_row>> done) = 0;

  /// The rows were sent.
  virtual void mark_sent(std::vector<int64_t> ids, callback<void> done) = 0;

  /// Sending the rows failed: counted, the error kept, the hold dropped so they go next time.
  virtual void mark_failed(std::vector<int64_t> ids, std::string error, callback<void> done) = 0;

  /// Deletes rows sent longer ago than `retention`; answers how many.
  virtual void prune(std::chrono::seconds retention, callback<int64_t> done) = 0;
};

} // namespace ingestd
