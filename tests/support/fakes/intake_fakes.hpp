// An in-memory fake of the intake repository port (adapters/db/intake_repository.hpp), in the
// style of fakes.hpp: it keeps the contract of pg_intake_repository that intake relies on (one
// holder per (tenant, content) lock, a document found by tenant and content hash, a retried
// ingestion id creates nothing new), records every request, can be told to fail (fail_next with
// "lock_content", "find_document", "create_ingestion"), and lists misuse in violations(): an
// ingestion created without holding its content's lock. The look-ups the HTTP server and
// `ingestd status` make are not faked: they fail and count as a violation. Thread-safe.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "adapters/db/intake_repository.hpp"
#include "tests/support/fakes/fakes.hpp"

namespace ingestd::test {

class fake_intake_repository : public intake_repository, public fault_script {
public:
  struct document_row {
    uuid document_id;
    std::string file_path;
    std::string mime_type;
  };
  struct ingestion_row {
    intake_request request;
    uuid document_id;
    /// "in-progress" | "completed" | "failed" (set_status).
    std::string status = "in-progress";
  };

  result<std::unique_ptr<content_lock>>
  lock_content(uuid tenant_id, const std::string& content_hash, timeout t) override;
  result<intake_result> create_ingestion(const intake_request& request, timeout t) override;
  result<std::optional<known_document>> find_by_source_key(uuid, const std::string&,
                                                           timeout) override;

  result<std::optional<std::string>> document_json(uuid, uuid, timeout) override;
  result<std::optional<std::string>> ingestion_json(uuid, uuid, timeout) override;
  result<std::string> review_json(int, timeout) override;
  result<std::string> documents_json(int, timeout) override;
  result<std::optional<ingestion_status>> find_ingestion(uuid, timeout) override;
  result<status_summary> summarize(timeout) override;
  result<cancel_result> cancel_ingestion(uuid, std::optional<uuid>, const std::string&,
                                         timeout) override;
  result<std::vector<retried_item>> retry_failed(const retry_request&, timeout) override;
  result<batch_info> open_batch(uuid, const std::string&, timeout) override;
  result<std::optional<batch_info>> seal_batch(uuid, std::optional<uuid>, timeout) override;
  result<void> note_duplicate(uuid, uuid, timeout) override;
  result<std::optional<batch_info>> find_batch(uuid, std::optional<uuid>, timeout) override;
  result<std::vector<batch_info>> list_batches(std::optional<uuid>, int, timeout) override;
  result<std::vector<uuid>> batch_in_progress(uuid, timeout) override;
  result<void> ping(timeout) override;

  /// What a stage does to an ingestion: "completed", "failed".
  void set_status(uuid ingestion_id, const std::string& status);
  /// Every create_ingestion request, in order (retries and refused ones included).
  std::vector<intake_request> requests();
  size_t documents();
  size_t ingestions();
  std::vector<std::string> violations();

private:
  class lock;
  using key = std::pair<std::string, std::string>; // tenant, content hash
  result<std::optional<known_document>> find(const key& k);
  void release(const key& k);
  error unsupported(const char* call);

  std::condition_variable released_;
  std::set<key> locked_;
  std::map<key, document_row> documents_;
  std::map<std::string, ingestion_row> ingestions_; // by ingestion id
  std::vector<std::string> ingestion_order_;
  std::vector<intake_request> requests_;
};

} // namespace ingestd::test
