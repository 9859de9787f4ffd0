// Assertions shared by the end-to-end tests: every ingestion completed exactly once.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/daemon/e2e_setup.hpp"

namespace ingestd::test {

/// Every id in `ids` is `completed`, with exactly one `complete` event of outcome ok, its
/// document's structured_data set by the trigger and needs_human_review false.
void expect_completed_exactly_once(e2e_setup& s, const std::vector<std::string>& ids);

/// Waits (deadline) until every id has its `complete` ok audit event; false at the deadline.
bool await_complete_events(e2e_setup& s, const std::vector<std::string>& ids, std::chrono::seconds deadline);

/// Waits (deadline) until `n` ingestions are completed; fails with the daemons' logs otherwise.
bool await_completed(e2e_setup& s, int64_t n, std::chrono::seconds deadline);

/// Messages left in the setup's queue.
int64_t queue_depth(e2e_setup& s);

} // namespace ingestd::test
