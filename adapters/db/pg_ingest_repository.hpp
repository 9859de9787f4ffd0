// The ingest stage's database port over PostgreSQL. Calls that arrive while a statement of their
// kind runs go together in the next one (adapters/support/coalescing_queue.hpp): under load a
// batch forms during each round trip; when idle, a call goes at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "adapters/db/ingest_repository.hpp"
#include "adapters/db/pg_connection.hpp"
#include "adapters/support/coalescing_queue.hpp"

namespace ingestd {

struct pg_ingest_options {
  /// Connection threads (each owns one connection).
  int pool_size = 2;
  pg::session_options session = {};
  /// Messages of the next stages' work: outbox rows the relay sends (SQS), or rows of the
  /// Postgres queue.
  bool via_outbox = false;
};

/// Callbacks run on the pool's threads. Destroying it runs the calls already made, then closes
/// the connections.
class pg_ingest_repository final : public ingest_repository {
public:
  explicit pg_ingest_repository(std::string database_url, const pg_ingest_options& opts = {});
  ~pg_ingest_repository() override;

  void load(uuid id, callback<ingestion_details> done) override;
  void record_transcription(claim_ref ref, transcription_record record,
                            callback<void> done) override;
  void keep_output(claim_ref ref, std::string structured_data, callback<void> done) override;
  void complete(std::vector<ingest_completion> completions,
                callback<std::vector<result<void>>> done) override;

  /// Statements sent for each coalesced call (fewer than calls under load), for tests and benches.
  struct counters {
    uint64_t loads = 0, transcriptions = 0, completions = 0;
  };
  counters statements() const;

private:
  struct pending_load {
    uuid id;
    callback<ingestion_details> done;
  };
  struct pending_transcription {
    claim_ref ref;
    transcription_record record;
    callback<void> done;
  };
  struct pending_completion {
    ingest_completion completion;
    callback<void> done;
  };
  struct queues;

  void load_batch(pg::connection& conn, std::vector<pending_load>& batch);
  void transcription_batch(pg::connection& conn, std::vector<pending_transcription>& batch);
  void completion_batch(pg::connection& conn, std::vector<pending_completion>& batch);

  bool via_outbox_;
  std::unique_ptr<queues> queues_;
  std::unique_ptr<pg::pool> pool_;
};

} // namespace ingestd
