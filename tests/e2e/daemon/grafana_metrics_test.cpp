// The Grafana dashboard against a real scrape: `ingestd run` on the embedded default
// (Postgres queue, filesystem store, local OCR and extraction) with its admin port open ingests
// and matches two submitted documents; its /metrics text then goes to the dashboard validator
// (deploy/grafana/validate), which fails naming every metric a panel or variable query uses that
// the daemon does not export. The same scrape refuses a dashboard with a misspelt metric, so the
// check can fail at all. Skipped, saying so, where node or the validator's npm packages are not
// installed (deploy/install-deps.sh installs both).

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <httplib.h>

#include "e2e_checks.hpp"
#include "tests/support/environment.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;
namespace fs = std::filesystem;

namespace {

fs::path validator_dir() {
  return fs::path{source_dir()} / "deploy/grafana/validate";
}

fs::path dashboard() {
  return fs::path{source_dir()} / "deploy/grafana/ingestd-dashboard.json";
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

std::string read_text(const fs::path& p) {
  std::ifstream in{p};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out{p};
  out << text;
  if (!out)
    throw std::runtime_error("cannot write " + p.string());
}

ingestd::test::shell_result validate(const fs::path& scrape, const fs::path& board) {
  return ingestd::test::run_shell("node '" + (validator_dir() / "validate.cjs").string()
                                  + "' --metrics '" + scrape.string() + "' '" + board.string()
                                  + "'");
}

} // namespace

TEST(e2e_daemon_grafana_metrics, every_dashboard_query_names_a_metric_the_daemon_exports) {
  if (auto why = missing(); !why.empty())
    GTEST_SKIP() << why << ": the dashboard's metric names are not checked";
  e2e_setup s;
  int port = ingestd::test::free_tcp_port();
  auto d = s.start({{"INGESTD_ADMIN__PORT", std::to_string(port)},
                    {"INGESTD_ADMIN__BIND", "127.0.0.1"},
                    {"INGESTD_WORKER__ID", "e2e-grafana"}});

  // Two documents through both stages (ingest, then match), so that job and step series exist.
  auto env = s.daemon_env();
  auto corpus = fs::path{source_dir()} / "tests/fixtures/corpus";
  {
    daemon_process submit{env,
                          s.root() + "/submit.log",
                          {"submit", (corpus / "inv01_en_classic.pdf").string(),
                           (corpus / "inv02_de_modern.pdf").string()}};
    ASSERT_EQ(submit.wait_exit(60s), 0) << submit.log_tail();
  }
  ASSERT_TRUE(await_completed(s, 2, 120s));
  ASSERT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM document_matching WHERE matching_status = 'succeeded'")
               == 2;
      },
      120s))
      << s.logs();

  // The scrape, once it shows the finished jobs and their steps.
  httplib::Client admin{"127.0.0.1", port};
  admin.set_connection_timeout(5);
  std::string scrape;
  ASSERT_TRUE(wait_until(
      [&] {
        auto res = admin.Get("/metrics");
        if (!res || res->status != 200)
          return false;
        scrape = res->body;
        return scrape.find("ingestd_jobs_total{") != std::string::npos
               && scrape.find("ingestd_step_duration_seconds_bucket{") != std::string::npos;
      },
      30s, 200ms))
      << "no job and step series in /metrics:\n"
      << scrape << "\n"
      << s.logs();
  auto scrape_file = fs::path{s.root()} / "metrics.txt";
  write_text(scrape_file, scrape);

  auto r = validate(scrape_file, dashboard());
  EXPECT_EQ(r.code, 0) << r.output << "\nthe scrape:\n" << scrape;
  EXPECT_NE(r.output.find("every metric in the scrape"), std::string::npos) << r.output;

  // The same scrape refuses a dashboard that names a metric the daemon does not export.
  auto text = read_text(dashboard());
  const std::string name = "ingestd_cpu_pool_backlog";
  auto at = text.find(name);
  ASSERT_NE(at, std::string::npos) << "the dashboard plots no " << name;
  text.insert(at + name.size(), "_misspelt");
  auto broken = fs::path{s.root()} / "broken-dashboard.json";
  write_text(broken, text);
  auto refused = validate(scrape_file, broken);
  EXPECT_EQ(refused.code, 1) << refused.output;
  EXPECT_NE(refused.output.find("ingestd_cpu_pool_backlog_misspelt is not exported"),
            std::string::npos)
      << refused.output;

  d->signal(SIGTERM);
  auto rc = d->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << d->log_tail();
  EXPECT_EQ(*rc, 0) << d->log_tail();
}
