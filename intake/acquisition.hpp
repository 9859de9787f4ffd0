// What one pass of a channel that fetches documents from elsewhere (intake/mailbox_intake.hpp,
// intake/bucket_intake.hpp) did, counted and logged the same way for each.
#pragma once

#include <cstdint>
#include <string_view>

namespace ingestd {

struct acquisition_report {
  /// Items taken in as new documents (or new ingestions of known ones).
  int64_t taken = 0;
  /// Items intake already had (by source key or content): nothing new.
  int64_t duplicates = 0;
  /// Items refused for what they are (type, size), or gone before they were read.
  int64_t refused = 0;
  /// Notifications that named nothing to take (other events, prefixes, not an event at all).
  int64_t ignored = 0;
  /// Sources (mailboxes, buckets) whose pass failed: a server, storage, the database.
  int64_t failed = 0;
  /// A source had more than one pass takes.
  bool more = false;
};

/// Logs `r` as `what` ("mailboxes read") when it took, found or refused anything.
void log_pass(std::string_view what, const acquisition_report& r);

} // namespace ingestd
