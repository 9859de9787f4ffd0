// The pruning actor: every interval it asks the node's retention (retention/pruner.hpp) for one
// bounded pass, and again at once while a pass found more than one batch due; logs and counts
// what each pass removed. A pass runs on the retention's own thread; one at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include <caf/fwd.hpp>

#include "messages/protocol.hpp"
#include "messages/result.hpp"

namespace ingestd {

class worker_metrics;

/// What one pass removed.
struct prune_report {
  int64_t originals = 0;
  /// Derived objects (transcriptions, preprocessed scans, page renders).
  int64_t derived = 0;
  int64_t audit_rows = 0;
  /// Rows of the status event stream (the stream's and the sinks' delivered copies).
  int64_t events = 0;
  /// A batch was full: more is due.
  bool more = false;
};

/// One bounded pass of retention, answered from the retention's own thread.
class retention_pass {
public:
  virtual ~retention_pass() = default;
  virtual void run(callback<prune_report> done) = 0;
};

pruning_actor spawn_pruning(caf::actor_system& sys, std::shared_ptr<retention_pass> pass,
                            std::chrono::milliseconds interval,
                            std::shared_ptr<worker_metrics> metrics = nullptr);

} // namespace ingestd
