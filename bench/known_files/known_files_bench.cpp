// Measures `ingestd known-files import` (pg_known_files::import: COPY into a staging table, merge
// with ON CONFLICT DO NOTHING) on N generated hashes, then the same list again, and the claim-time
// look-up of a document against the loaded set.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "adapters/db/pg_known_files.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using clock_type = std::chrono::steady_clock;

namespace {

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Writes n hashes, one a line: even lines MD5 (32 hex digits), odd lines SHA-256 (64).
void generate(const std::string& path, int64_t n) {
  std::ofstream out{path};
  uint64_t state = 42;
  char buf[80];
  for (int64_t i = 0; i < n; ++i) {
    int words = i % 2 == 0 ? 2 : 4;
    char* p = buf;
    for (int w = 0; w < words; ++w)
      p += std::snprintf(p, 17, "%016llx", static_cast<unsigned long long>(splitmix(state)));
    *p++ = '\n';
    out.write(buf, p - buf);
  }
}

double since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

} // namespace

int main(int argc, char** argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  if (n <= 0) {
    std::fprintf(stderr, "usage: bench_known_files [HASHES]\n");
    return 2;
  }
  try {
    test::pg_schema db{true};
    auto dir = test::make_temp_dir("bench_known_files");
    auto path = dir + "/hashes.txt";
    auto t0 = clock_type::now();
    generate(path, n);
    std::printf("generated %lld hashes (%.1f MB) in %.2f s\n", static_cast<long long>(n),
                static_cast<double>(std::filesystem::file_size(path)) / 1e6, since(t0));
    pg_known_files set{db.url()};
    for (const char* round : {"first import", "again (idempotent)"}) {
      std::ifstream in{path};
      auto t = clock_type::now();
      auto report = set.import(in, path);
      auto s = since(t);
      if (!report) {
        std::fprintf(stderr, "import failed: %s\n", report.error().describe().c_str());
        return 1;
      }
      std::printf("%-20s %lld hashes, %lld new: %.2f s (%.0f hashes/s)\n", round,
                  static_cast<long long>(report->hashes), static_cast<long long>(report->added), s,
                  static_cast<double>(report->hashes) / s);
      bool first = std::string{round} == "first import";
      if (report->hashes != n || report->added != (first ? n : 0)) {
        std::fprintf(stderr, "unexpected counts\n");
        return 1;
      }
    }
    // The claim's look-up: a document's hash against the set, by index.
    auto t = clock_type::now();
    constexpr int lookups = 1000;
    for (int i = 0; i < lookups; ++i)
      db.scalar("SELECT EXISTS (SELECT 1 FROM known_file WHERE hash = md5($1))",
                {std::to_string(i)});
    std::printf("look-up of a hash    %.3f ms each (%d look-ups, round trip included)\n",
                since(t) * 1000 / lookups, lookups);
    std::printf("table size           %s\n",
                db.scalar("SELECT pg_size_pretty(pg_total_relation_size('known_file'))").c_str());
    std::filesystem::remove_all(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_known_files: %s\n", e.what());
    return 1;
  }
  return 0;
}
