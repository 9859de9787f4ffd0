// CPU time for the benchmarks to divide by the jobs: the local PostgreSQL server's and this
// process's, steadier figures of what a job costs than throughput on a shared machine.
#pragma once

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/resource.h>
#include <unistd.h>

namespace ingestd::bench {

/// CPU seconds (user + system) of every process named `postgres` on this machine, with the
/// children they have waited for (the backends that exited count through the postmaster).
inline double database_cpu_seconds() {
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  double total = 0;
  std::error_code ec;
  for (auto& entry : std::filesystem::directory_iterator{"/proc", ec}) {
    auto pid = entry.path().filename().string();
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0])))
      continue;
    std::ifstream in{entry.path() / "stat"};
    std::string line;
    if (!std::getline(in, line))
      continue;
    // pid (comm) state ppid ...: the name may hold spaces, so read after its closing parenthesis.
    auto open = line.find('(');
    auto close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos
        || line.compare(open + 1, close - open - 1, "postgres") != 0)
      continue;
    std::istringstream rest{line.substr(close + 2)};
    std::string field;
    // Fields 3..13 (state to cmajflt), then utime, stime, cutime, cstime.
    for (int i = 3; i <= 13 && rest >> field; ++i) {
    }
    long long utime = 0, stime = 0, cutime = 0, cstime = 0;
    rest >> utime >> stime >> cutime >> cstime;
    total += static_cast<double>(utime + stime + cutime + cstime) / ticks;
  }
  return total;
}

/// CPU seconds (user + system) of this process, all its threads (not its children: a bench's stub
/// server is a child of its own).
inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

} // namespace ingestd::bench
