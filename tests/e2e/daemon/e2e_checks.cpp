// Assertions shared by the end-to-end tests, as SQL over the fresh schema.
#include "e2e_checks.hpp"

#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace ingestd::test {

void expect_completed_exactly_once(e2e_setup& s, const std::vector<std::string>& ids) {
  auto arr = pg_array(ids);
  auto n = static_cast<int64_t>(ids.size());
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion WHERE id = ANY($1::uuid[]) AND status = 'completed'", {arr}), n)
    << s.logs();
  // The work item is the claim: completed, and the ingestion's status follows it.
  EXPECT_EQ(
      s.count("SELECT count(*) FROM work_item WHERE id = ANY($1::uuid[]) AND stage = 'ingest' "
              "AND status = 'completed' AND completed_at IS NOT NULL",
              {arr}),
      n);
  // The audit trail is written in the completion's transaction: a completed ingestion has its
  // `complete` row, with nothing left to wait for.
  // Exactly one successful completion per ingestion: none missing, none twice.
  EXPECT_EQ(s.count("SELECT count(DISTINCT ingestion_id) FROM ingestion_event "
                    "WHERE ingestion_id = ANY($1::uuid[]) AND step = 'complete' AND outcome = 'ok'", {arr}), n);
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event "
                    "WHERE ingestion_id = ANY($1::uuid[]) AND step = 'complete' AND outcome = 'ok'", {arr}), n)
    << "one complete event per ingestion: none missing, none twice";
  // The trigger copied the result to the document.
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion i JOIN document d ON d.id = i.document_id "
                    "WHERE i.id = ANY($1::uuid[]) AND d.structured_data IS NOT NULL "
                    "AND d.structured_data = i.structured_data AND NOT d.needs_human_review", {arr}), n);
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE id = ANY($1::uuid[]) "
                    "AND (claim_token IS NOT NULL OR lease_expires_at IS NOT NULL)",
                    {arr}),
            0)
      << "completed work items keep no claim";
}

bool await_complete_events(e2e_setup& s, const std::vector<std::string>& ids, std::chrono::seconds deadline) {
  auto arr = pg_array(ids);
  auto n = static_cast<int64_t>(ids.size());
  auto events = [&] {
    return s.count("SELECT count(DISTINCT ingestion_id) FROM ingestion_event "
                   "WHERE ingestion_id = ANY($1::uuid[]) AND step = 'complete' AND outcome = 'ok'", {arr});
  };
  return wait_until([&] { return events() >= n; }, deadline, std::chrono::milliseconds{100});
}

bool await_completed(e2e_setup& s, int64_t n, std::chrono::seconds deadline) {
  bool ok = wait_until([&] { return s.with_status("completed") >= n; }, deadline, std::chrono::milliseconds{200});
  EXPECT_TRUE(ok) << s.with_status("completed") << " of " << n << " completed, "
                  << s.with_status("failed") << " failed\n" << s.logs();
  return ok;
}

int64_t queue_depth(e2e_setup& s) {
  return s.count("SELECT count(*) FROM queue_message WHERE queue_name = $1", {s.queue_name()});
}

silent_server::silent_server() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_, 16) != 0
      || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("cannot listen on 127.0.0.1");
  port_ = ntohs(a.sin_port);
}

silent_server::~silent_server() {
  ::close(fd_);
}

std::string silent_server::url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

bool await_waiting_on_extraction(e2e_setup& s, std::chrono::seconds deadline) {
  return wait_until(
      [&] {
        return s.count("SELECT count(*) FROM ingestion AS i JOIN work_item AS w ON w.id = i.id "
                       "WHERE w.status = 'in-progress' AND w.claim_token IS NOT NULL "
                       "AND i.transcription_file_path IS NOT NULL")
               == 1;
      },
      deadline);
}

} // namespace ingestd::test
