// Assertions shared by the end-to-end tests: every ingestion completed exactly once; and LLM
// servers that keep jobs in flight (one that never answers, one that answers when told).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/daemon/e2e_setup.hpp"
#include "tests/support/environment.hpp"

/// A gtest check that `haystack` (a string) holds `needle`, printing the haystack when not.
#define EXPECT_CONTAINS(haystack, needle)                                                          \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing \"" << (needle) << "\" in:\n"  \
                                                        << (haystack)

namespace ingestd::test {

/// Every id in `ids` is `completed` (its work item and, through the trigger, its ingestion), with
/// exactly one `complete` event of outcome ok, no claim left, its document's structured_data set
/// by the trigger and needs_human_review false.
void expect_completed_exactly_once(e2e_setup& s, const std::vector<std::string>& ids);

/// Waits (deadline) until every id has its `complete` ok audit event; false at the deadline.
bool await_complete_events(e2e_setup& s, const std::vector<std::string>& ids,
                           std::chrono::seconds deadline);

/// Waits (deadline) until `n` ingestions are completed; fails with the daemons' logs otherwise.
bool await_completed(e2e_setup& s, int64_t n, std::chrono::seconds deadline);

/// Messages left in the setup's queue.
int64_t queue_depth(e2e_setup& s);

/// Runs an `ingestd` command against the setup (its daemon_env() plus `extra`), ended after
/// `timeout_seconds`.
cli_result run_cli(e2e_setup& s, const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& extra = {}, int timeout_seconds = 60);

/// Stops a daemon with SIGTERM: it exits 0 within 60 s (a gtest failure otherwise).
void stop_cleanly(daemon_process& d);

/// A TCP listener on 127.0.0.1 that never answers: as the LLM's URL it keeps a job in flight, its
/// claim held, for as long as the request's timeout.
class silent_server {
public:
  silent_server();
  ~silent_server();
  silent_server(const silent_server&) = delete;
  silent_server& operator=(const silent_server&) = delete;

  std::string url() const;

private:
  int fd_ = -1;
  int port_ = 0;
};

/// An LLM server (chat completions) that holds every request until the test releases it, then
/// answers each with a valid invoice that passes the quality gate: as the LLM's URL it keeps jobs
/// in flight, their claims held, for exactly as long as the test wants, whatever the machine's
/// speed.
class held_llm_server {
public:
  held_llm_server();
  /// Stops answering and closes every connection.
  ~held_llm_server();
  held_llm_server(const held_llm_server&) = delete;
  held_llm_server& operator=(const held_llm_server&) = delete;

  std::string url() const;
  /// Requests received so far (answered or held).
  int requests() const;
  /// From now on every request, held or new, is answered.
  void release();
  /// The next `n` requests, held or new, are answered; the others stay held.
  void release(int n);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Waits (deadline) until the one in-progress ingestion is claimed and transcribed: its job waits
/// on the extractor.
bool await_waiting_on_extraction(e2e_setup& s, std::chrono::seconds deadline);

/// Waits (deadline) until `n` in-progress ingestions are claimed and transcribed: their jobs wait
/// on the extractor.
bool await_waiting_on_extraction(e2e_setup& s, int64_t n, std::chrono::seconds deadline);

} // namespace ingestd::test
