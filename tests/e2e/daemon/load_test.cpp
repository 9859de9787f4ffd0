// Load never becomes failure: more scans than one node's CPU pool can finish within the OCR
// deadline, all at once, with a single attempt allowed. A document that waits for a CPU worker
// past its deadline is given back without counting an attempt, and the poller admits work only
// while the pool can finish its backlog in time, so every document completes and none fails.
#include <chrono>
#include <csignal>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

TEST(e2e_daemon_load, a_burst_of_scans_beyond_the_cpu_pool_completes_without_failures) {
  e2e_setup s;
  // About 0.75 s of OCR each on one worker: three times the deadline in all, while each scan
  // alone fits in it several times over (the test runs alone: RUN_SERIAL).
  auto ids = s.add_documents(20, doc_kind::scan_png);
  s.enqueue(ids);
  auto node = s.start({{"INGESTD_WORKER__ID", "e2e-load"},
                       {"INGESTD_WORKER__PREPROCESSING_POOL_SIZE_DEC", "256"}, // one CPU worker
                       {"INGESTD_TRANSCRIPTION__TIMEOUT_SECONDS", "5"},
                       {"INGESTD_WORKER__STEP_TIMEOUT_SECONDS", "5"},
                       {"INGESTD_WORKER__MAX_RETRY_ATTEMPTS", "1"}});
  ASSERT_TRUE(await_completed(s, static_cast<int64_t>(ids.size()), 400s))
      << s.with_status("completed") << " completed, " << s.with_status("failed") << " failed\n"
      << s.logs();
  EXPECT_EQ(s.with_status("failed"), 0);
  // No attempt counted: a wait for a CPU worker past the deadline gives the work back instead
  // (and the burst was beyond the pool: some work was given back).
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE stage = 'ingest' AND attempt_count > 0"),
            0);
  EXPECT_GT(s.count("SELECT count(*) FROM ingestion_event WHERE step = 'release'"), 0) << s.logs();
  node->signal(SIGTERM);
  auto rc = node->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << node->log_tail();
  EXPECT_EQ(*rc, 0) << node->log_tail();
  expect_completed_exactly_once(s, ids);
}
