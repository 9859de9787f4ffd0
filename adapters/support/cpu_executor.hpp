// Where adapters run CPU-heavy work (OCR, OpenCV): the actor layer's CPU pool in the daemon, a
// plain thread in unit tests. Keeps adapters free of CAF and off CAF's scheduler threads.
#pragma once

#include "messages/cpu_job.hpp"

namespace ingestd {

/// Runs cpu_jobs off the caller's thread; honours each job's deadline.
class cpu_executor {
public:
  virtual ~cpu_executor() = default;
  virtual void submit(cpu_job job) = 0;
};

} // namespace ingestd
