// The systemd units of deploy/systemd (the single node's and the template for several nodes on
// one host) pass `systemd-analyze verify` without a warning, with ExecStart pointed at the built
// binary. Skipped, saying so, where systemd-analyze is not installed.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/environment.hpp"

namespace fs = std::filesystem;

namespace {

bool have_systemd_analyze() {
  return ingestd::test::run_shell("command -v systemd-analyze").code == 0;
}

/// The unit `name` of deploy/systemd, written as `as` into `dir` with the built binary in
/// ExecStart (verify checks that the command exists).
fs::path copy_unit(const std::string& name, const fs::path& dir, const std::string& as) {
  std::ifstream in{fs::path{ingestd::test::source_dir()} / "deploy/systemd" / name};
  EXPECT_TRUE(in) << name << " is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  auto text = ss.str();
  const std::string installed = "/usr/local/bin/ingestd";
  for (auto i = text.find(installed); i != std::string::npos; i = text.find(installed, i))
    text.replace(i, installed.size(), ingestd::test::ingestd_binary());
  auto path = dir / as;
  std::ofstream out{path};
  out << text;
  return path;
}

ingestd::test::shell_result verify(const fs::path& unit) {
  return ingestd::test::run_shell("SYSTEMD_LOG_COLOR=0 systemd-analyze verify '" + unit.string()
                                  + "'");
}

} // namespace

TEST(systemd_units, the_single_node_unit_verifies) {
  if (!have_systemd_analyze())
    GTEST_SKIP() << "systemd-analyze is not installed: the units are not checked";
  auto dir = fs::path{ingestd::test::make_temp_dir("systemd")};
  auto r = verify(copy_unit("ingestd.service", dir, "ingestd.service"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output, "") << "systemd-analyze warns";
  fs::remove_all(dir);
}

TEST(systemd_units, the_template_verifies_as_an_instance) {
  if (!have_systemd_analyze())
    GTEST_SKIP() << "systemd-analyze is not installed: the units are not checked";
  auto dir = fs::path{ingestd::test::make_temp_dir("systemd")};
  copy_unit("ingestd@.service", dir, "ingestd@.service");
  // An instance is a link to its template; the instance name is the node's admin port.
  fs::create_symlink("ingestd@.service", dir / "ingestd@9465.service");
  auto r = verify(dir / "ingestd@9465.service");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output, "") << "systemd-analyze warns";
  fs::remove_all(dir);
}

TEST(systemd_units, a_unit_with_an_unknown_key_fails_the_check) {
  if (!have_systemd_analyze())
    GTEST_SKIP() << "systemd-analyze is not installed: the units are not checked";
  // The check above must be able to fail: an unknown key is only a warning (exit 0).
  auto dir = fs::path{ingestd::test::make_temp_dir("systemd")};
  auto unit = copy_unit("ingestd.service", dir, "ingestd.service");
  std::ofstream{unit, std::ios::app} << "[Service]\nRestartSecc=5s\n";
  auto r = verify(unit);
  EXPECT_NE(r.output.find("RestartSecc"), std::string::npos) << r.output;
  fs::remove_all(dir);
}
