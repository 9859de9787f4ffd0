// Three nodes against one database and queue: the registry shows each with its host,
// pid, version, stages and capacity; `ingestd drain` of one node makes it stop polling, finish its
// jobs and exit 0 (draining -> stopped) while the others take the rest, every document completed
// exactly once; a node killed with -9 is shown as lost and its claims are taken over once they
// expire; a node older than the schema's recorded minimum refuses to start.
#include <csignal>
#include <unistd.h>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"
#include "tests/support/environment.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

namespace {

/// Short leases so that a killed node's work comes back within seconds: the lease (lost after
/// it), the receive visibility and each extension, and at most two jobs per node so that the
/// work spreads over the three.
std::map<std::string, std::string> node_env(const std::string& id) {
  return {{"INGESTD_WORKER__ID", id},
          {"INGESTD_STAGES__ENABLED", "ingest"},
          {"INGESTD_WORKER__MAX_IN_FLIGHT", "2"},
          {"INGESTD_WORKER__LEASE_SECONDS", "6"},
          {"INGESTD_WORKER__HEARTBEAT_EXTENSION_SECONDS", "8"},
          {"INGESTD_QUEUE__VISIBILITY_TIMEOUT_SECONDS", "8"}};
}

std::string state_of(e2e_setup& s, const std::string& id) {
  auto rows = s.db().query("SELECT CASE WHEN state <> 'stopped' AND last_seen < now() - "
                           "make_interval(secs => lease_seconds) "
                           "THEN 'lost' ELSE state END FROM worker_node WHERE id = $1",
                           {id});
  return rows.empty() ? std::string{"absent"} : rows[0][0].value_or("");
}

int64_t held_by(e2e_setup& s, const std::string& id) {
  return s.count("SELECT count(*) FROM work_item WHERE stage = 'ingest' AND status = 'in-progress' "
                 "AND claimed_by = $1 "
                 "AND claim_token IS NOT NULL",
                 {id});
}

/// Runs an `ingestd` command against the setup's database; its exit code and output.
std::pair<int, std::string> cli_with_log(e2e_setup& s, const std::vector<std::string>& args) {
  static int n = 0;
  daemon_process p{s.daemon_env(), s.root() + "/cli-" + std::to_string(++n) + ".log", args};
  auto rc = p.wait_exit(60s);
  return {rc.value_or(-1), p.log()};
}

} // namespace

TEST(e2e_daemon_cluster, registry_drain_and_kill_with_three_nodes) {
  e2e_setup s;
  auto n1 = s.start(node_env("e2e-n1"));
  auto n2 = s.start(node_env("e2e-n2"));
  auto n3 = s.start(node_env("e2e-n3"));
  ASSERT_TRUE(wait_until(
      [&] { return s.count("SELECT count(*) FROM worker_node WHERE state = 'running'") == 3; },
      30s))
      << s.logs();

  // The registry: one row per node, as `ingestd nodes --json` shows it.
  auto [nodes_rc, nodes_out] = cli_with_log(s, {"nodes", "--json"});
  ASSERT_EQ(nodes_rc, 0) << nodes_out;
  for (auto& [id, d] : {std::pair{"e2e-n1", n1.get()}, std::pair{"e2e-n2", n2.get()},
                        std::pair{"e2e-n3", n3.get()}}) {
    auto row = s.db().query("SELECT pid::text, version, stages, capacity::text, in_flight::text "
                            "FROM worker_node WHERE id = $1",
                            {std::string{id}});
    ASSERT_EQ(row.size(), 1U) << id;
    EXPECT_EQ(row[0][0], std::to_string(d->pid()));
    EXPECT_EQ(row[0][1], "0.2.0");
    EXPECT_EQ(row[0][2], "ingest");
    EXPECT_EQ(row[0][3], "2");
    EXPECT_NE(nodes_out.find(std::string{"\"id\":\""} + id + "\",\"state\":\"running\""),
              std::string::npos)
        << nodes_out;
  }
  EXPECT_NE(nodes_out.find("\"by_state\":{\"running\":3,\"draining\":0,\"stopped\":0,\"lost\":0}"),
            std::string::npos)
      << nodes_out;

  // Drain n1 while it works: it finishes what it holds and exits 0; the others take the rest.
  auto first = s.add_documents(6, doc_kind::scan_png);
  s.enqueue(first);
  ASSERT_TRUE(wait_until([&] { return held_by(s, "e2e-n1") >= 1; }, 30s)) << s.logs();
  auto [drain_rc, drain_out] = cli_with_log(s, {"drain", "e2e-n1"});
  ASSERT_EQ(drain_rc, 0) << drain_out;
  EXPECT_NE(drain_out.find("drain requested: e2e-n1"), std::string::npos) << drain_out;
  ASSERT_TRUE(wait_until([&] { return state_of(s, "e2e-n1") != "running"; }, 10s))
      << n1->log_tail();
  auto seen = state_of(s, "e2e-n1");
  EXPECT_TRUE(seen == "draining" || seen == "stopped") << seen;
  auto rc = n1->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << n1->log_tail();
  EXPECT_EQ(*rc, 0) << n1->log_tail();
  EXPECT_EQ(state_of(s, "e2e-n1"), "stopped");
  EXPECT_NE(n1->log().find("drain requested: shutting down as on SIGTERM"), std::string::npos)
      << n1->log_tail();
  // Work that arrives after the drain goes to the others only.
  auto second = s.add_documents(4, doc_kind::text_pdf);
  s.enqueue(second);
  std::vector<std::string> all = first;
  all.insert(all.end(), second.begin(), second.end());
  ASSERT_TRUE(await_completed(s, static_cast<int64_t>(all.size()), 120s));
  ASSERT_TRUE(await_complete_events(s, all, 30s)) << s.logs();
  expect_completed_exactly_once(s, all);
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event WHERE worker_id = 'e2e-n1' AND "
                    "ingestion_id = ANY($1::uuid[])",
                    {pg_array(second)}),
            0)
      << "the drained node took new work";
  EXPECT_GT(
      s.count("SELECT count(*) FROM ingestion_event WHERE step = 'complete' AND outcome = 'ok' "
              "AND worker_id IN ('e2e-n2', 'e2e-n3')"),
      0);

  // kill -9 of n2 while it holds claims: lost after its lease, its work taken over by n3.
  auto third = s.add_documents(4, doc_kind::scan_png);
  s.enqueue(third);
  ASSERT_TRUE(wait_until([&] { return held_by(s, "e2e-n2") >= 1; }, 30s)) << s.logs();
  n2->signal(SIGKILL);
  rc = n2->wait_exit(30s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 128 + SIGKILL);
  std::vector<std::string> after;
  for (auto& r :
       s.db().query("SELECT id FROM ingestion WHERE id = ANY($1::uuid[]) AND status <> 'completed'",
                    {pg_array(third)}))
    after.push_back(*r[0]);
  ASSERT_FALSE(after.empty()) << "every job finished before the kill: the test proves nothing";
  ASSERT_TRUE(wait_until([&] { return state_of(s, "e2e-n2") == "lost"; }, 20s)) << n2->log_tail();
  auto [status_rc, status_out] = cli_with_log(s, {"status", "--json"});
  EXPECT_EQ(status_rc, 0) << status_out;
  EXPECT_NE(status_out.find("\"nodes\":{\"running\":1,\"draining\":0,\"stopped\":1,\"lost\":1}"),
            std::string::npos)
      << status_out;
  ASSERT_TRUE(await_completed(s, static_cast<int64_t>(all.size() + third.size()), 120s));
  ASSERT_TRUE(await_complete_events(s, after, 30s)) << s.logs();
  expect_completed_exactly_once(s, after);
  EXPECT_EQ(
      s.count(
          "SELECT count(*) FROM (SELECT ingestion_id FROM ingestion_event WHERE step = 'complete' "
          "AND outcome = 'ok' GROUP BY ingestion_id HAVING count(*) > 1) x"),
      0)
      << "an ingestion was completed twice";

  // drain --all stops the last one.
  auto [all_rc, all_out] = cli_with_log(s, {"drain", "--all", "--wait", "--timeout", "60"});
  EXPECT_EQ(all_rc, 0) << all_out;
  rc = n3->wait_exit(30s);
  ASSERT_TRUE(rc.has_value()) << n3->log_tail();
  EXPECT_EQ(*rc, 0) << n3->log_tail();
  EXPECT_EQ(state_of(s, "e2e-n3"), "stopped");
  EXPECT_EQ(state_of(s, "e2e-n2"), "lost") << "drain --all does not revive a lost node";
}

TEST(e2e_daemon_cluster, a_node_older_than_the_schema_needs_refuses_to_start) {
  e2e_setup s;
  s.db().query("INSERT INTO schema_migrations (version, name, min_node_version) "
               "VALUES (999, '999_needs_a_newer_node.sql', '999.0.0')");
  auto d = s.start(node_env("e2e-old"));
  auto rc = d->wait_exit(30s);
  ASSERT_TRUE(rc.has_value()) << d->log_tail();
  EXPECT_EQ(*rc, 1);
  EXPECT_NE(d->log().find("the database schema needs ingestd 999.0.0 or newer (migration "
                          "999_needs_a_newer_node.sql)"),
            std::string::npos)
      << d->log_tail();
  EXPECT_EQ(state_of(s, "e2e-old"), "absent") << "a refused node does not register";
}

TEST(e2e_daemon_cluster, nodes_and_drain_answer_clearly_on_bad_input) {
  e2e_setup s;
  auto [empty_rc, empty_out] = cli_with_log(s, {"nodes"});
  EXPECT_EQ(empty_rc, 0) << empty_out;
  EXPECT_NE(empty_out.find("none registered"), std::string::npos) << empty_out;
  auto [unknown_rc, unknown_out] = cli_with_log(s, {"drain", "no-such-node"});
  EXPECT_EQ(unknown_rc, 1) << unknown_out;
  EXPECT_NE(unknown_out.find("no node \"no-such-node\" in the registry"), std::string::npos)
      << unknown_out;
  for (auto& args : std::vector<std::vector<std::string>>{{"drain"},
                                                          {"drain", "a", "--all"},
                                                          {"drain", "a", "b"},
                                                          {"drain", "--all", "--timeout", "soon"},
                                                          {"nodes", "--bogus"}}) {
    auto [rc, out] = cli_with_log(s, args);
    EXPECT_EQ(rc, 2) << args.back() << ": " << out;
  }
  auto [help_rc, help_out] = cli_with_log(s, {"drain", "--help"});
  EXPECT_EQ(help_rc, 0);
  EXPECT_NE(help_out.find("Usage: ingestd drain"), std::string::npos) << help_out;
}

TEST(e2e_daemon_cluster, migrate_refuses_while_a_live_node_is_older_than_a_migration_needs) {
  e2e_setup s;
  auto add_node = [&](const std::string& id, const std::string& version, const std::string& seen) {
    s.db().query("INSERT INTO worker_node (id, incarnation, host, pid, version, stages, capacity, "
                 "lease_seconds, "
                 "last_seen) VALUES ($1, gen_random_uuid(), 'h', 1, $2, 'ingest', 10, 30, now() - "
                 "$3::interval)",
                 {id, version, seen});
  };
  add_node("lost-old", "0.0.1", "1 hour"); // lost: not in the way
  add_node("current", "0.2.0", "0 seconds");
  auto [ok_rc, ok_out] = cli_with_log(s, {"migrate"});
  EXPECT_EQ(ok_rc, 0) << ok_out;
  // A node of the release before the work items: it reads the claim columns 015 moves.
  add_node("live-old", "0.1.0", "0 seconds");
  auto [rc, out] = cli_with_log(s, {"migrate"});
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(
      out.find("node live-old runs ingestd 0.1.0, older than 0.2.0 that 015_work_items.sql needs"),
      std::string::npos)
      << out;
  EXPECT_EQ(out.find("lost-old"), std::string::npos) << out;
  auto [forced_rc, forced_out] = cli_with_log(s, {"migrate", "--force"});
  EXPECT_EQ(forced_rc, 0) << forced_out;
  EXPECT_NE(forced_out.find("warning: node live-old"), std::string::npos) << forced_out;
}
