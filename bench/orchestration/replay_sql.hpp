// The pgbench replay of bench/orchestration: the SQL one job of the ingest stage sends, as the
// adapters send it, written out as a pgbench script.
#pragma once

#include <string>
#include <vector>

namespace ingestd::bench {

struct replay {
  std::string script;
  int statements = 0;
};

/// One job per pgbench transaction: receive, claim, the heartbeat's visibility extension and
/// lease renewal, load, the completion's transaction (BEGIN, the results with the transcription,
/// finish with the audit trail `audit_steps`, COMMIT) and the delete. Commands end with `;`, or
/// with \gset when their answer feeds the next ones.
replay replay_sql(const std::string& queue, const std::vector<std::string>& audit_steps);

} // namespace ingestd::bench
