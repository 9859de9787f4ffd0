// `ingestd known-files import FILE | add FILE... | count`: the known-file hash set (deNIST) whose
// documents the claim ends `skipped` instead of processing them.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>

#include "adapters/aws/encoding.hpp"
#include "adapters/db/pg_known_files.hpp"
#include "app/cli.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* known_files_usage = R"(Usage: ingestd known-files import FILE|-
       ingestd known-files add FILE...
       ingestd known-files count

  import FILE   streams a hash list into the known-file set, in one transaction (a bad line
                keeps nothing and names the line); hashes already in the set are left alone, so
                importing the same list again adds nothing. FILE is an NSRL-style CSV file whose
                header names an MD5 and/or a SHA-256 column ("SHA-1","MD5",... or
                sha256,sha1,md5,...), or a plain list of one MD5 or SHA-256 per line; '-' reads
                standard input. Lines that are empty or start with '#' are skipped.
  add FILE...   adds the MD5 and SHA-256 of each file
  count         prints how many hashes the set holds

A document whose SHA-256 or MD5 is in the set is not processed: its ingestion ends with status
'skipped' and reason 'known_file' when a worker claims it.
)";

int import_hashes(const config& cfg, const std::string& file) {
  std::ifstream stream;
  std::istream* in = &std::cin;
  if (file != "-") {
    stream.open(file, std::ios::binary);
    if (!stream) {
      std::fprintf(stderr, "ingestd known-files import: cannot open %s\n", file.c_str());
      return failure;
    }
    in = &stream;
  }
  auto started = std::chrono::steady_clock::now();
  pg_known_files set{cfg.database.url};
  auto report = set.import(*in, file == "-" ? std::string{"stdin"} : file);
  if (!report) {
    std::fprintf(stderr, "ingestd known-files import: %s: %s\n", file.c_str(),
                 report.error().describe().c_str());
    return failure;
  }
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("imported %lld hashes from %lld lines of %s: %lld new, %lld already known (%.1f s)\n",
              static_cast<long long>(report->hashes), static_cast<long long>(report->lines),
              file.c_str(), static_cast<long long>(report->added),
              static_cast<long long>(report->hashes - report->added), seconds);
  return ok;
}

int add_files(const config& cfg, const std::vector<std::string>& files) {
  std::vector<known_hash> hashes;
  std::vector<std::string> sources;
  for (auto& file : files) {
    std::ifstream in{file, std::ios::binary};
    if (!in) {
      std::fprintf(stderr, "ingestd known-files add: cannot open %s\n", file.c_str());
      return failure;
    }
    std::string bytes{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
    if (in.bad()) {
      std::fprintf(stderr, "ingestd known-files add: cannot read %s\n", file.c_str());
      return failure;
    }
    hashes.push_back({aws::md5_hex(bytes), "md5"});
    hashes.push_back({aws::sha256_hex(bytes), "sha256"});
    sources.insert(sources.end(), 2, "add: " + file);
  }
  pg_known_files set{cfg.database.url};
  auto added = set.add(hashes, sources);
  if (!added) {
    std::fprintf(stderr, "ingestd known-files add: %s\n", added.error().describe().c_str());
    return failure;
  }
  for (size_t i = 0; i < files.size(); ++i)
    std::printf("%s  md5 %s  sha256 %s\n", files[i].c_str(), hashes[2 * i].hash.c_str(),
                hashes[2 * i + 1].hash.c_str());
  std::printf("added %lld new hashes (%zu already known)\n", static_cast<long long>(*added),
              hashes.size() - static_cast<size_t>(*added));
  return ok;
}

} // namespace

int known_files_command(const arguments& args) {
  for (auto& a : args.raw)
    if (a == "--help" || a == "-h") {
      std::fputs(known_files_usage, stdout);
      return ok;
    }
  auto& pos = args.positional;
  auto what = pos.empty() ? std::string{} : pos[0];
  bool valid = (what == "import" && pos.size() == 2) || (what == "add" && pos.size() >= 2)
               || (what == "count" && pos.size() == 1);
  if (!valid || !args.flags.empty()) {
    std::fputs(known_files_usage, stderr);
    return usage;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  if (what == "import")
    return import_hashes(*cfg, pos[1]);
  if (what == "add")
    return add_files(*cfg, {pos.begin() + 1, pos.end()});
  pg_known_files set{cfg->database.url};
  auto n = set.count();
  if (!n) {
    std::fprintf(stderr, "ingestd known-files count: %s\n", n.error().describe().c_str());
    return failure;
  }
  std::printf("%lld\n", static_cast<long long>(*n));
  return ok;
}

} // namespace ingestd::cli
