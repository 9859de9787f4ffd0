// Replays a fuzz target's corpus without libFuzzer (the normal GCC build, CTest fuzz_<name>):
// every file of the directories or files given on the command line, then a few generated edge
// inputs (empty, 1 MiB of 0xFF, of NUL, deep JSON and XML nesting, long digit runs). A crash,
// a failed property check (abort) or an uncaught exception fails the test.
//
//   <name>_fuzz [corpus-dir-or-file...]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void feed(const std::string& bytes) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string repeat(std::string_view unit, size_t times) {
  std::string out;
  out.reserve(unit.size() * times);
  for (size_t i = 0; i < times; ++i)
    out.append(unit);
  return out;
}

std::vector<std::string> generated_inputs() {
  constexpr size_t mib = size_t{1024} * 1024;
  return {
      "",
      std::string(mib, '\xFF'),
      std::string(mib, '\0'),
      std::string(mib, '['),
      repeat("{\"a\":", 200'000),
      repeat("[", 100'000) + repeat("]", 100'000),
      "{\"choices\":" + repeat("[", 100'000),
      // A well-formed answer whose content (the model's JSON) nests without end.
      "200\n\n{\"choices\":[{\"finish_reason\":\"stop\",\"message\":{\"content\":\"{\\\"line_"
      "items\\\":"
          + repeat("[", 200'000) + repeat("]", 200'000) + "}\"}}]}",
      "200\n\n{\"version\":1,\"pages\":" + repeat("[", 200'000) + repeat("]", 200'000) + "}",
      repeat("<Error>", 100'000),
      std::string(100'000, '9'),
      "Retry-After: " + std::string(400, '9'),
      repeat("Total 1.234,56 EUR 15.03.2024\n", 20'000),
  };
}

} // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  size_t files = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<fs::path> paths;
    if (fs::is_directory(argv[i])) {
      for (const auto& e : fs::directory_iterator(argv[i]))
        if (e.is_regular_file())
          paths.push_back(e.path());
    } else {
      paths.emplace_back(argv[i]);
    }
    std::sort(paths.begin(), paths.end());
    if (paths.empty()) {
      std::fprintf(stderr, "no input in %s\n", argv[i]);
      return 1;
    }
    for (const auto& p : paths) {
      std::ifstream in{p, std::ios::binary};
      if (!in) {
        std::fprintf(stderr, "cannot read %s\n", p.c_str());
        return 1;
      }
      std::string bytes{std::istreambuf_iterator<char>{in}, {}};
      feed(bytes);
      ++files;
    }
  }
  auto extra = generated_inputs();
  for (const auto& bytes : extra)
    feed(bytes);
  std::printf("%s: %zu corpus files and %zu generated inputs replayed\n",
              fs::path{argv[0]}.filename().c_str(), files, extra.size());
  return 0;
}
