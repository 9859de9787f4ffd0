// `ingestd config check|defaults`: validates and prints the effective configuration.
#include <cstdio>

#include "app/cli.hpp"

namespace ingestd::cli {

int config_command(const arguments& args) {
  auto sub = args.positional.empty() ? std::string{} : args.positional.front();
  if (sub == "defaults") {
    std::fputs(default_config_json().c_str(), stdout);
    return ok;
  }
  if (sub != "check") {
    std::fprintf(stderr, "ingestd config: expected 'check' or 'defaults'\n");
    return usage;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  std::fputs(cfg->to_json().c_str(), stdout);
  return ok;
}

} // namespace ingestd::cli
