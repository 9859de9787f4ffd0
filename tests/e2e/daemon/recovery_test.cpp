// kill -9 with the defaults' lease (15 s) and nothing else set: the message's visibility follows
// the lease (lease + 5 s), so another node takes the work over once the lease has run out and
// finishes it within about 20 s of the kill, not minutes.
#include <chrono>
#include <csignal>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

TEST(e2e_daemon_recovery,
     a_killed_nodes_document_is_finished_by_another_within_the_lease_and_padding) {
  // The defaults' relation: the lease, and the heartbeat and visibility derived from it (0).
  const std::map<std::string, std::string> default_lease{
      {"INGESTD_WORKER__LEASE_SECONDS", "15"}, {"INGESTD_WORKER__HEARTBEAT_RATE_SECONDS", "0"}};
  const auto lease = 15s;
  const auto padding = 5s; // of the receive visibility and each extension over the lease
  const auto slack = 15s;  // a poll, the claim and a text PDF's processing on a loaded machine
  e2e_setup s;
  silent_server llm;
  auto ids = s.add_documents(1, doc_kind::text_pdf);
  s.enqueue(ids);
  auto first_env = default_lease;
  first_env.insert({{"INGESTD_WORKER__ID", "e2e-first"},
                    {"INGESTD_EXTRACTION__PROVIDER", "llm"},
                    {"INGESTD_EXTRACTION__LLM_BASE_URL", llm.url()}});
  auto first = s.start(first_env);
  // Claimed and transcribed: the job waits on the silent LLM, its claim kept alive. On a loaded
  // machine a first claim can run out during the transcription (the job then stops and claims
  // again later): the kill must come while the first node's claim is live.
  ASSERT_TRUE(await_waiting_on_extraction(s, 120s)) << s.logs();
  // The live claim's lease, read in one statement with how long the work stays out of another
  // node's reach: until the later of the lease's end and the message's visibility (database time).
  std::string held_until;
  double hidden_for = 0;
  auto read_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_until(
      [&] {
        read_at = std::chrono::steady_clock::now();
        auto rows = s.db().query(
            "SELECT w.lease_expires_at::text, extract(epoch FROM greatest(w.lease_expires_at, "
            "(SELECT max(visible_at) FROM queue_message WHERE body = w.id::text)) - now()) "
            "FROM work_item AS w WHERE w.id = $1::uuid AND w.claimed_by = 'e2e-first' "
            "AND w.status = 'in-progress' AND w.lease_expires_at > now()",
            {ids[0]});
        if (rows.empty())
          return false;
        held_until = rows[0][0].value_or("");
        hidden_for = std::stod(rows[0][1].value_or("0"));
        return true;
      },
      120s))
      << s.logs();
  first->signal(SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  auto rc = first->wait_exit(30s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 128 + SIGKILL);

  auto second_env = default_lease;
  second_env.insert({"INGESTD_WORKER__ID", "e2e-second"});
  auto second = s.start(second_env);
  ASSERT_TRUE(await_completed(
      s, 1, std::chrono::duration_cast<std::chrono::seconds>(lease + padding + slack + 60s)));
  auto took = std::chrono::steady_clock::now() - killed;
  EXPECT_LE(took, lease + padding + slack)
      << "finished " << std::chrono::duration<double>(took).count() << " s after the kill\n"
      << s.logs();
  // Not before the dead node's lease had run out and its message became visible again, counted
  // from just before both were read (the lease also in the database's time below). With the
  // heartbeat on time that is 15-20 s: the visibility is the lease plus 5 s.
  auto since_read = std::chrono::duration<double>(std::chrono::steady_clock::now() - read_at);
  EXPECT_GE(since_read.count(), hidden_for)
      << "finished " << since_read.count() << " s after the claim was read, which kept the work "
      << "out of reach for " << hidden_for << " s\n"
      << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE id = $1::uuid AND claimed_by = "
                    "'e2e-second' AND started_at >= $2::timestamptz",
                    {ids[0], held_until}),
            1)
      << "taken over before the lease seen at the kill (" << held_until << ") ran out\n"
      << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1::uuid AND step = "
                    "'complete' "
                    "AND outcome = 'ok' AND worker_id = 'e2e-second'",
                    {ids[0]}),
            1);
  second->signal(SIGTERM);
  rc = second->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << second->log_tail();
  EXPECT_EQ(*rc, 0) << second->log_tail();
  expect_completed_exactly_once(s, ids);
}
