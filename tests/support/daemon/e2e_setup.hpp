// What an end-to-end test of the daemon works with: a fresh migrated schema, a fresh queue name,
// a storage root in a temp dir, documents of the corpus registered as ingestions, and daemons
// started with short waits against all of it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/daemon/daemon_process.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

namespace ingestd::test {

enum class doc_kind {
  text_pdf,   ///< the corpus's native-text PDFs (inv01..inv06): quick, complete locally
  scan_png,   ///< the corpus's PNG scans: seconds of OCR each
  corrupt_pdf ///< tests/fixtures/corpus/bad/truncated.pdf: a permanent failure
};

/// Writes an object (key, bytes, content type) into the daemon's storage.
using object_writer
    = std::function<void(const std::string&, const std::string&, const std::string&)>;

class e2e_setup {
public:
  e2e_setup();
  ~e2e_setup();
  e2e_setup(const e2e_setup&) = delete;
  e2e_setup& operator=(const e2e_setup&) = delete;

  pg_schema& db() { return *db_; }
  const std::string& root() const { return root_; }
  const std::string& queue_name() const { return queue_; }
  /// The matching stage's queue (created with its dead-letter queue, redrive after 3 receives).
  std::string match_queue_name() const;
  /// The unpack stage's queue ("<queue>-unpack").
  std::string unpack_queue_name() const;

  /// The daemon's overrides: this schema, this queue (Postgres backend), this storage root, short
  /// waits (1 s long poll, 1 s heartbeats, a 10 s lease that the receive visibility and each
  /// extension follow), admin port off, JSON logs, local OCR and extraction.
  std::map<std::string, std::string> daemon_env() const;

  /// Registers `n` documents of `kind` (cycling through the corpus files): stores each file
  /// under documents/{document id}.{ext} (with `write`, or into root() when empty) and inserts its
  /// document, its in-progress ingestion and the ingestion's work item (stage ingest, unclaimed),
  /// as intake does but without the queue message. Returns the ingestion ids (not enqueued).
  /// Each document gets a tenant of its own, or all of them `tenant`.
  std::vector<std::string> add_documents(int n, doc_kind kind, const object_writer& write = {},
                                         const std::string& tenant = {});

  /// Registers one document of the given bytes (stored in root()) of `tenant` (a new one when
  /// empty), its in-progress ingestion and its work item; returns the ingestion id (not enqueued).
  std::string add_document_bytes(const std::string& bytes, const std::string& ext,
                                 const std::string& mime, const std::string& tenant = {});

  /// The corpus file name (e.g. "inv01_en_classic.pdf") an ingestion of add_documents() was made
  /// from; "" for any other id.
  std::string source_of(const std::string& ingestion_id) const;

  /// Inserts one Postgres-queue message per body into this queue.
  void enqueue(const std::vector<std::string>& bodies);

  /// Starts `ingestd run` with daemon_env() plus `extra`; its log goes to root()/daemon-N.log.
  std::unique_ptr<daemon_process> start(const std::map<std::string, std::string>& extra = {});

  /// An integer query's answer.
  int64_t count(const std::string& sql, const std::vector<std::optional<std::string>>& params = {});
  /// Ingestions of this schema with status `status`.
  int64_t with_status(const std::string& status);

  /// The tails of every daemon log written so far (for failure messages).
  std::string logs() const;

private:
  std::unique_ptr<pg_schema> db_;
  std::string root_;
  std::string queue_;
  int daemons_ = 0;
  std::map<std::string, std::string> sources_;
};

/// "{a,b,c}": a text[] / uuid[] parameter.
std::string pg_array(const std::vector<std::string>& items);

} // namespace ingestd::test
