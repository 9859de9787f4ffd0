// deploy/grafana/ingestd-dashboard.json validates offline against the dashboard types of the npm
// package @grafana/schema (type-checked with TypeScript), its layout and data source hold, and
// every query parses as PromQL (deploy/grafana/validate); the validator refuses broken dashboards.
// Whether the queries name metrics the daemon exports is e2e_daemon_grafana_metrics' check (a
// real scrape). Skipped, saying so, where node or the validator's npm packages are not installed
// (deploy/install-deps.sh installs both).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/environment.hpp"

namespace fs = std::filesystem;

namespace {

fs::path validator_dir() {
  return fs::path{ingestd::test::source_dir()} / "deploy/grafana/validate";
}

fs::path dashboard() {
  return fs::path{ingestd::test::source_dir()} / "deploy/grafana/ingestd-dashboard.json";
}

/// Why the check cannot run here, or "" when it can.
std::string missing() {
  if (ingestd::test::run_shell("command -v node").code != 0)
    return "node is not installed";
  for (auto package : {"@grafana/schema", "typescript", "@prometheus-io/lezer-promql"})
    if (!fs::exists(validator_dir() / "node_modules" / package))
      return std::string{package}
             + " is not installed: run deploy/install-deps.sh (npm ci in deploy/grafana/validate)";
  return {};
}

std::string validator() {
  return "node '" + (validator_dir() / "validate.cjs").string() + "'";
}

} // namespace

TEST(grafana_dashboard, the_validator_refuses_broken_dashboards) {
  if (auto why = missing(); !why.empty())
    GTEST_SKIP() << why << ": the dashboard is not checked";
  auto r = ingestd::test::run_shell(validator() + " --self-test");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("self-test: the valid dashboard passes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" passed, 0 failed"), std::string::npos) << r.output;
}

TEST(grafana_dashboard, the_dashboard_matches_the_grafana_schema) {
  if (auto why = missing(); !why.empty())
    GTEST_SKIP() << why << ": the dashboard is not checked";
  auto r = ingestd::test::run_shell(validator() + " '" + dashboard().string() + "'");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("ingestd-dashboard.json: ok ("), std::string::npos) << r.output;
}

TEST(grafana_dashboard, the_dashboard_shows_each_node) {
  // Nodes are told apart by ingestd_node_info's node label, chosen with the node variable; a row
  // repeats for each node chosen.
  std::ifstream in{dashboard()};
  ASSERT_TRUE(in) << dashboard();
  std::stringstream ss;
  ss << in.rdbuf();
  auto text = ss.str();
  EXPECT_NE(text.find("\"query\": \"label_values(ingestd_node_info, node)\""), std::string::npos);
  EXPECT_NE(text.find("\"repeat\": \"node\""), std::string::npos);
  EXPECT_NE(text.find("* on(instance) group_left(node) ingestd_node_info{node=~\\\"$node\\\"}"),
            std::string::npos);
}

TEST(grafana_dashboard, a_dashboard_that_is_not_json_is_refused) {
  if (auto why = missing(); !why.empty())
    GTEST_SKIP() << why << ": the dashboard is not checked";
  auto dir = fs::path{ingestd::test::make_temp_dir("grafana")};
  auto file = dir / "broken.json";
  std::ofstream{file} << "{\"title\": \"x\", \"panels\": [";
  auto r = ingestd::test::run_shell(validator() + " '" + file.string() + "'");
  EXPECT_EQ(r.code, 1) << r.output;
  fs::remove_all(dir);
}
