// pg_node_repository against the real PostgreSQL (migration 006): registration and takeover of a
// reused id, refreshes fenced by the incarnation, lost computed from the lease when read, drain
// requests (one node, all), stopped rows kept and pruned by age. And the migrator's node version
// minimums: the header parsed, recorded, and a node older than a recorded minimum refused.
#include <gtest/gtest.h>

#include "adapters/db/migrator.hpp"
#include "adapters/db/pg_node_repository.hpp"
#include "adapters/support/blocking_call.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using ingestd::test::pg_schema;

namespace {

constexpr std::chrono::seconds deadline{30};

template <class T, class Start>
T must(Start&& start) {
  auto r = blocking_call<T>(deadline, "test.timeout", "the repository", std::forward<Start>(start));
  if (!r)
    throw std::runtime_error(r.error().describe());
  if constexpr (!std::is_void_v<T>)
    return std::move(*r);
}

node_registration node(const std::string& id, int32_t pid = 100) {
  node_registration n;
  n.id = id;
  n.incarnation = uuid::v4();
  n.host = "host-a";
  n.pid = pid;
  n.version = "0.1.0";
  n.stages = "ingest,match";
  n.classes = "small,large";
  n.capacity = 50;
  n.lease = std::chrono::seconds{10};
  return n;
}

std::vector<node_info> list(node_repository& repo) {
  return must<std::vector<node_info>>([&](auto cb) { repo.list(cb); });
}

node_refresh_answer refresh(node_repository& repo, const node_registration& n, int32_t in_flight,
                            bool draining = false) {
  return must<node_refresh_answer>([&](auto cb) {
    repo.refresh(node_refresh{n.id, n.incarnation, in_flight, 7, draining, in_flight / 50.0}, cb);
  });
}

} // namespace

TEST(node_repository, registers_refreshes_and_lists_with_the_state) {
  pg_schema db;
  pg_node_repository repo{db.url()};
  auto a = node("a");
  must<void>([&](auto cb) { repo.register_node(a, cb); });
  auto answer = refresh(repo, a, 3);
  EXPECT_TRUE(answer.found);
  EXPECT_FALSE(answer.drain_requested);
  auto nodes = list(repo);
  ASSERT_EQ(nodes.size(), 1U);
  EXPECT_EQ(nodes[0].id, "a");
  EXPECT_EQ(nodes[0].state, "running");
  EXPECT_EQ(nodes[0].host, "host-a");
  EXPECT_EQ(nodes[0].pid, 100);
  EXPECT_EQ(nodes[0].version, "0.1.0");
  EXPECT_EQ(nodes[0].stages, "ingest,match");
  EXPECT_EQ(nodes[0].classes, "small,large");
  EXPECT_EQ(nodes[0].capacity, 50);
  EXPECT_EQ(nodes[0].in_flight, 3);
  EXPECT_NEAR(nodes[0].capacity_usage, 0.06, 1e-6);
  EXPECT_EQ(nodes[0].done_last_minute, 7);
  EXPECT_EQ(nodes[0].last_seen.size(), 20U) << nodes[0].last_seen; // 2026-01-01T00:00:00Z
  refresh(repo, a, 1, true);
  EXPECT_EQ(list(repo)[0].state, "draining");
  must<void>([&](auto cb) { repo.mark_stopped(a.id, a.incarnation, cb); });
  EXPECT_EQ(list(repo)[0].state, "stopped");
  EXPECT_EQ(list(repo)[0].in_flight, 0);
  // A refresh that was on its way when the node stopped changes nothing.
  EXPECT_FALSE(refresh(repo, a, 5).found);
  EXPECT_EQ(list(repo)[0].state, "stopped");
}

TEST(node_repository, a_reused_id_takes_the_row_over_and_fences_the_old_process) {
  pg_schema db;
  pg_node_repository repo{db.url()};
  auto old = node("n", 100);
  must<void>([&](auto cb) { repo.register_node(old, cb); });
  must<std::vector<std::string>>([&](auto cb) { repo.request_drain(std::string{"n"}, cb); });
  auto restarted = node("n", 200);
  must<void>([&](auto cb) { repo.register_node(restarted, cb); });
  auto nodes = list(repo);
  ASSERT_EQ(nodes.size(), 1U);
  EXPECT_EQ(nodes[0].pid, 200);
  EXPECT_EQ(nodes[0].state, "running");
  EXPECT_FALSE(nodes[0].drain_requested)
      << "a restart is a new node: the old drain request is done";
  EXPECT_FALSE(refresh(repo, old, 9).found) << "the old process no longer refreshes the row";
  EXPECT_TRUE(refresh(repo, restarted, 2).found);
  EXPECT_EQ(list(repo)[0].in_flight, 2);
}

TEST(node_repository, a_node_not_seen_for_its_lease_is_lost_and_rows_are_pruned_by_age) {
  pg_schema db;
  pg_node_repository repo{db.url()};
  auto live = node("live"), gone = node("gone"), stopped = node("stopped"), old = node("old");
  for (auto* n : {&live, &gone, &stopped, &old})
    must<void>([&](auto cb) { repo.register_node(*n, cb); });
  must<void>([&](auto cb) { repo.mark_stopped(stopped.id, stopped.incarnation, cb); });
  db.query("UPDATE worker_node SET last_seen = now() - interval '11 seconds' WHERE id IN ('gone', "
           "'stopped')");
  db.query("UPDATE worker_node SET last_seen = now() - interval '2 hours' WHERE id = 'old'");
  std::map<std::string, std::string> states;
  for (auto& n : list(repo))
    states[n.id] = n.state;
  EXPECT_EQ(states["live"], "running");
  EXPECT_EQ(states["gone"], "lost");
  EXPECT_EQ(states["stopped"], "stopped") << "a stopped node is never lost";
  EXPECT_EQ(states["old"], "lost");
  EXPECT_EQ(must<int64_t>([&](auto cb) { repo.prune(std::chrono::hours{1}, cb); }), 1);
  EXPECT_EQ(list(repo).size(), 3U);
}

TEST(node_repository, drain_requests_one_node_or_every_node_not_stopped) {
  pg_schema db;
  pg_node_repository repo{db.url()};
  auto a = node("a"), b = node("b"), c = node("c");
  for (auto* n : {&a, &b, &c})
    must<void>([&](auto cb) { repo.register_node(*n, cb); });
  must<void>([&](auto cb) { repo.mark_stopped(c.id, c.incarnation, cb); });
  auto one
      = must<std::vector<std::string>>([&](auto cb) { repo.request_drain(std::string{"a"}, cb); });
  EXPECT_EQ(one, std::vector<std::string>{"a"});
  EXPECT_TRUE(refresh(repo, a, 0).drain_requested);
  EXPECT_FALSE(refresh(repo, b, 0).drain_requested);
  EXPECT_TRUE(must<std::vector<std::string>>([&](auto cb) {
                repo.request_drain(std::string{"c"}, cb);
              }).empty())
      << "a stopped node is not asked";
  EXPECT_TRUE(must<std::vector<std::string>>([&](auto cb) {
                repo.request_drain(std::string{"zz"}, cb);
              }).empty());
  auto all = must<std::vector<std::string>>([&](auto cb) { repo.request_drain(std::nullopt, cb); });
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(refresh(repo, b, 0).drain_requested);
}

TEST(node_versions, the_header_is_parsed_and_versions_compare_by_number) {
  migration with{6, "006_x.sql",
                 "-- ingestd-min-node-version: 0.10.2\n-- more\nCREATE TABLE x ();\n"};
  migration without{5, "005_x.sql",
                    "-- nothing here\nCREATE TABLE y ();\n-- ingestd-min-node-version: 9.9.9\n"};
  EXPECT_EQ(min_node_version(with), "0.10.2");
  EXPECT_EQ(min_node_version(without), "") << "only the leading comment lines count";
  EXPECT_LT(*parse_node_version("0.9.9"), *parse_node_version("0.10.0"));
  EXPECT_EQ(*parse_node_version("1.2.3-rc1"), (std::array<int, 3>{1, 2, 3}));
  EXPECT_FALSE(parse_node_version("1.2"));
  EXPECT_FALSE(parse_node_version("1.2.3.4"));
  EXPECT_FALSE(parse_node_version("unknown"));
  for (auto& m : embedded_migrations()) {
    auto v = min_node_version(m);
    EXPECT_TRUE(v.empty() || parse_node_version(v)) << m.name << ": bad header \"" << v << "\"";
  }
}

TEST(node_versions, a_node_older_than_a_recorded_minimum_is_refused) {
  pg_schema db;
  EXPECT_EQ(db.scalar("SELECT min_node_version FROM schema_migrations WHERE version = 6"), "0.1.0");
  // Migration 015 moved the claim columns that 0.1 nodes read.
  EXPECT_EQ(db.scalar("SELECT min_node_version FROM schema_migrations WHERE version = 15"),
            "0.2.0");
  auto too_old = check_node_version(db.url(), "0.1.0");
  ASSERT_FALSE(too_old);
  EXPECT_EQ(too_old.error().code, "node.too_old");
  EXPECT_NE(
      too_old.error().message.find("needs ingestd 0.2.0 or newer (migration 015_work_items.sql)"),
      std::string::npos)
      << too_old.error().message;
  EXPECT_TRUE(check_node_version(db.url(), "0.2.0"));
  db.query("INSERT INTO schema_migrations (version, name, min_node_version) VALUES (900, "
           "'900_additive.sql', NULL)");
  EXPECT_TRUE(check_node_version(db.url(), "0.2.0")) << "an additive migration keeps older nodes";
  db.query("INSERT INTO schema_migrations (version, name, min_node_version) VALUES (901, "
           "'901_break.sql', '0.3.0')");
  auto refused = check_node_version(db.url(), "0.2.9");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "node.too_old");
  EXPECT_NE(refused.error().message.find("needs ingestd 0.3.0 or newer (migration 901_break.sql)"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("this node is 0.2.9"), std::string::npos);
  EXPECT_TRUE(check_node_version(db.url(), "0.3.0"));
  EXPECT_TRUE(check_node_version(db.url(), "1.0.0"));
}

TEST(node_versions, a_database_without_recorded_minimums_lets_every_node_run) {
  pg_schema db{false};
  EXPECT_TRUE(check_node_version(db.url(), "0.1.0")) << "no schema_migrations at all";
  db.query("CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
           "applied_at timestamptz NOT NULL DEFAULT now())");
  EXPECT_TRUE(check_node_version(db.url(), "0.1.0")) << "migrated before minimums were recorded";
  // The next migrate adds the column to such a table.
  auto report = migrate(db.url(), embedded_migrations());
  ASSERT_TRUE(report) << report.error().describe();
  EXPECT_EQ(db.scalar("SELECT min_node_version FROM schema_migrations WHERE version = 6"), "0.1.0");
}
