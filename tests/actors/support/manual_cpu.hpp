// A CPU pool the actor tests drive: what is submitted waits until the test runs or expires it.
#pragma once

#include <utility>
#include <vector>

#include "adapters/support/cpu_executor.hpp"

namespace ingestd::test {

struct manual_cpu final : cpu_executor {
  std::vector<cpu_job> jobs;
  void submit(cpu_job job) override { jobs.push_back(std::move(job)); }
  cpu_job next() {
    auto job = std::move(jobs.front());
    jobs.erase(jobs.begin());
    return job;
  }
};

} // namespace ingestd::test
