// Both stages on the Postgres queue: every completed ingestion gets its matching job in the
// completion's transaction, and the documents of one tenant end in clusters of the same invoice.
// A match-only daemon (stages.serve = match) killed with -9 while it holds matching claims: two
// match-only daemons started after it finish everything; every document is matched, each pair
// stored once, and the clusters agree with the edges.
#include <csignal>
#include <map>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"
#include "messages/uuid.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

namespace {

int64_t matching(e2e_setup& s, const std::string& status) {
  return s.count("SELECT count(*) FROM document_matching WHERE matching_status = $1", {status});
}

/// Clusters agree with the edges: both ends of every edge share a cluster, and each cluster is
/// named by its smallest member.
void expect_consistent_clusters(e2e_setup& s) {
  EXPECT_EQ(
      s.count("SELECT count(*) FROM document_match m JOIN document a ON a.id = m.document_a_id "
              "JOIN document b ON b.id = m.document_b_id WHERE a.cluster_id IS DISTINCT FROM "
              "b.cluster_id"),
      0);
  EXPECT_EQ(s.count("SELECT count(*) FROM (SELECT cluster_id::text AS cluster, min(id::text) AS "
                    "first FROM document "
                    "GROUP BY cluster_id) c WHERE c.cluster IS DISTINCT FROM c.first"),
            0);
}

} // namespace

TEST(e2e_daemon_matching,
     both_stages_match_every_document_and_a_kill_during_matching_loses_nothing) {
  e2e_setup s;
  auto tenant = ingestd::uuid::v4().str();
  auto ids = s.add_documents(90, doc_kind::text_pdf, {}, tenant);
  s.enqueue(ids);
  // Ingestion only, first: the matching jobs wait on their queue, made with each completion.
  auto ingest = s.start({{"INGESTD_STAGES__SERVE", "ingest"}});
  ASSERT_TRUE(await_completed(s, static_cast<int64_t>(ids.size()), 420s));
  ASSERT_TRUE(
      wait_until([&] { return matching(s, "pending") == static_cast<int64_t>(ids.size()); }, 30s))
      << s.logs();
  EXPECT_EQ(
      s.count("SELECT count(*) FROM queue_message WHERE queue_name = $1", {s.match_queue_name()}),
      static_cast<int64_t>(ids.size()));
  ingest->signal(SIGTERM);
  ASSERT_TRUE(ingest->wait_exit(60s).has_value());

  // A match-only daemon, one job at a time, killed while it holds a claim. The test holds the
  // tenant's write-phase lock, so the daemon's claim stays in progress (its write waits) until the
  // kill: no race between seeing the claim and the kill.
  s.db().query("SELECT pg_advisory_lock(1769107, hashtext(current_schema() || ':' || $1))",
               {tenant});
  auto first = s.start({{"INGESTD_STAGES__SERVE", "match"},
                        {"INGESTD_MATCHING__MAX_IN_FLIGHT", "1"},
                        {"INGESTD_DATABASE__LOCK_TIMEOUT_SECONDS", "600"},
                        {"INGESTD_DATABASE__STATEMENT_TIMEOUT_SECONDS", "600"},
                        {"INGESTD_WORKER__ID", "e2e-match-first"}});
  ASSERT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM work_item WHERE stage = 'match' AND status = "
                       "'in-progress' "
                       "AND claim_token IS NOT NULL AND claimed_by = 'e2e-match-first'")
               >= 1;
      },
      300s))
      << s.logs();
  first->signal(SIGKILL);
  ASSERT_TRUE(first->wait_exit(30s).has_value());
  s.db().query("SELECT pg_advisory_unlock(1769107, hashtext(current_schema() || ':' || $1))",
               {tenant});
  auto held
      = s.count("SELECT count(*) FROM document_matching WHERE matching_status = 'in-progress'");
  ASSERT_EQ(held, 1);
  ASSERT_EQ(matching(s, "succeeded"), 0);

  // Two match-only daemons at once (the write phase is serialised per tenant).
  auto second
      = s.start({{"INGESTD_STAGES__SERVE", "match"}, {"INGESTD_WORKER__ID", "e2e-match-second"}});
  auto third
      = s.start({{"INGESTD_STAGES__SERVE", "match"}, {"INGESTD_WORKER__ID", "e2e-match-third"}});
  ASSERT_TRUE(wait_until(
      [&] { return matching(s, "succeeded") == static_cast<int64_t>(ids.size()); }, 300s))
      << s.logs();
  ASSERT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM queue_message WHERE queue_name = $1",
                       {s.match_queue_name()})
               == 0;
      },
      60s))
      << s.logs();
  for (auto* d : {second.get(), third.get()}) {
    d->signal(SIGTERM);
    auto rc = d->wait_exit(60s);
    ASSERT_TRUE(rc.has_value()) << d->log_tail();
    EXPECT_EQ(*rc, 0) << d->log_tail();
  }
  // Exactly once: one delivery each, two for the claims the kill left behind; nothing failed.
  EXPECT_EQ(matching(s, "failed"), 0);
  EXPECT_EQ(s.count("SELECT count(*) FROM document_matching WHERE matching_attempts > 2"), 0);
  EXPECT_LE(s.count("SELECT count(*) FROM document_matching WHERE matching_attempts = 2"), held);
  // The claim the kill left behind was taken over as a crash, once; every other document's
  // matching took one attempt and no crash.
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE stage = 'match' AND crash_count > 0"),
            held);
  EXPECT_EQ(
      s.count(
          "SELECT count(*) FROM work_item WHERE stage = 'match' AND (attempt_count > crash_count "
          "OR claim_token IS NOT NULL OR status <> 'completed')"),
      0);
  expect_consistent_clusters(s);
  // Copies of one corpus file are one cluster.
  std::map<std::string, std::string> cluster_of_source;
  for (auto& id : ids) {
    auto cluster = s.db().scalar(
        "SELECT d.cluster_id::text FROM ingestion i JOIN document d ON d.id = i.document_id "
        "WHERE i.id = $1",
        {id});
    auto [it, fresh] = cluster_of_source.emplace(s.source_of(id), cluster);
    EXPECT_EQ(it->second, cluster) << s.source_of(id);
  }
}
