// deploy/kubernetes validates offline against the Kubernetes API schema (the npm package
// kubernetes-models, under deploy/kubernetes/validate) and meets the drain's requirements (a
// preStop drain, a termination grace over the drain bound, a PodDisruptionBudget). Skipped,
// saying so, where node or the package is not installed (deploy/install-deps.sh installs both).
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/environment.hpp"

namespace fs = std::filesystem;

namespace {

fs::path validator_dir() {
  return fs::path{ingestd::test::source_dir()} / "deploy/kubernetes/validate";
}

/// Why the check cannot run here, or "" when it can.
std::string missing() {
  if (ingestd::test::run_shell("command -v node").code != 0)
    return "node is not installed";
  if (!fs::exists(validator_dir() / "node_modules/kubernetes-models"))
    return "kubernetes-models is not installed: run deploy/install-deps.sh (npm ci in "
           "deploy/kubernetes/validate)";
  return {};
}

} // namespace

TEST(kubernetes_manifests, the_validator_can_fail) {
  if (auto why = missing(); !why.empty())
    GTEST_SKIP() << why << ": the manifests are not checked";
  auto r = ingestd::test::run_shell("node '" + (validator_dir() / "validate.cjs").string()
                                    + "' --self-test");
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST(kubernetes_manifests, every_manifest_validates_and_drains_within_its_grace) {
  if (auto why = missing(); !why.empty())
    GTEST_SKIP() << why << ": the manifests are not checked";
  std::string files;
  int n = 0;
  for (auto& entry :
       fs::directory_iterator{fs::path{ingestd::test::source_dir()} / "deploy/kubernetes"})
    if (entry.path().extension() == ".yaml" || entry.path().extension() == ".yml") {
      files += " '" + entry.path().string() + "'";
      ++n;
    }
  ASSERT_GT(n, 0) << "no manifest in deploy/kubernetes";
  auto r = ingestd::test::run_shell("node '" + (validator_dir() / "validate.cjs").string() + "'"
                                    + files);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("Deployment/ingestd ok"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("PodDisruptionBudget/ingestd ok"), std::string::npos) << r.output;
}
