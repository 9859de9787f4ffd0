// deploy/kubernetes validates offline against the Kubernetes API schema (the npm package
// kubernetes-models, under deploy/kubernetes/validate) and meets the drain's requirements (a
// preStop drain, a termination grace over the drain bound, a PodDisruptionBudget). Skipped,
// saying so, where node or the package is not installed (deploy/install-deps.sh installs both).
#include <cstdio>
#include <filesystem>
#include <string>

#include <sys/wait.h>

#include <gtest/gtest.h>

#include "tests/support/environment.hpp"

namespace fs = std::filesystem;

namespace {

struct outcome {
  int code = -1;
  std::string output;
};

outcome run(const std::string& cmd) {
  outcome o;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr)
    return o;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p))
    o.output.append(buf, n);
  int st = ::pclose(p);
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}

fs::path validator_dir() {
  return fs::path{ingestd::test::source_dir()} / "deploy/kubernetes/validate";
}

/// Why the check cannot run here, or "" when it can.
std::string missing() {
  if (run("command -v node").code != 0)
    return "node is not installed";
  if (!fs::exists(validator_dir() / "node_modules/kubernetes-models"))
    return "kubernetes-models is not installed: run deploy/install-deps.sh (npm ci in deploy/kubernetes/validate)";
  return {};
}

} // namespace

TEST(kubernetes_manifests, the_validator_can_fail) {
  if (auto why = missing(); !why.empty())
    GTEST_SKIP() << why << ": the manifests are not checked";
  auto r = run("node '" + (validator_dir() / "validate.cjs").string() + "' --self-test");
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST(kubernetes_manifests, every_manifest_validates_and_drains_within_its_grace) {
  if (auto why = missing(); !why.empty())
    GTEST_SKIP() << why << ": the manifests are not checked";
  std::string files;
  int n = 0;
  for (auto& entry : fs::directory_iterator{fs::path{ingestd::test::source_dir()} / "deploy/kubernetes"})
    if (entry.path().extension() == ".yaml" || entry.path().extension() == ".yml") {
      files += " '" + entry.path().string() + "'";
      ++n;
    }
  ASSERT_GT(n, 0) << "no manifest in deploy/kubernetes";
  auto r = run("node '" + (validator_dir() / "validate.cjs").string() + "'" + files);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("Deployment/ingestd ok"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("PodDisruptionBudget/ingestd ok"), std::string::npos) << r.output;
}
