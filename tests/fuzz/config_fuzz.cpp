// Fuzz target: the configuration file and its environment overrides. A bad file must stop the
// program with a message naming the problem, never crash it.
// Input: optional environment lines "INGESTD_...=value" up to a line "--", then the file.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "config/config.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  environment env;
  if (auto sep = in.find("\n--\n"); sep != std::string_view::npos) {
    auto head = in.substr(0, sep);
    in.remove_prefix(sep + 4);
    while (!head.empty()) {
      auto line = fuzz::take_line(head);
      auto eq = line.find('=');
      if (eq != std::string_view::npos)
        env[std::string{line.substr(0, eq)}] = std::string{line.substr(eq + 1)};
    }
  }
  static const std::string path = "/tmp/ingestd-config-fuzz-" + std::to_string(getpid()) + ".json";
  {
    std::ofstream out{path, std::ios::binary | std::ios::trunc};
    out.write(in.data(), static_cast<std::streamsize>(in.size()));
  }
  auto cfg = load_config(path, env);
  if (cfg) {
    auto json = cfg->to_json();
    FUZZ_CHECK(!json.empty());
  } else {
    FUZZ_CHECK(!cfg.error().message.empty());
  }
  (void)mask_url_password(std::string{in.substr(0, 512)});
  return 0;
}
