// Where adapters run CPU-heavy work (OCR, OpenCV): the actor layer's CPU pool in the daemon, a
// plain thread in unit tests. Keeps adapters free of CAF and off CAF's scheduler threads.
#pragma once

#include <memory>

#include "messages/cpu_job.hpp"

namespace ingestd {

namespace sandbox {
class decoder;
} // namespace sandbox

/// Runs cpu_jobs off the caller's thread; honours each job's deadline.
class cpu_executor {
public:
  virtual ~cpu_executor() = default;
  virtual void submit(cpu_job job) = 0;
  /// Where a job parses or renders outside bytes (adapters/sandbox/decoder.hpp): the pool of
  /// decoder helper processes its workers drive, or null when the work runs in this process.
  virtual std::shared_ptr<sandbox::decoder> decoder() const { return nullptr; }
};

} // namespace ingestd
