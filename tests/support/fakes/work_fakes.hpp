// In-memory fakes of the claimed-work port (adapters/db/work_repository.hpp) and of the stages'
// own database ports over the same table (ingest_repository.hpp, matching_repository.hpp,
// container_repository.hpp), in the style of fakes.hpp: they keep the contracts of the real
// adapters (fenced writes, the claim's answers, the audit trail written with the state change it
// travels with, hand-offs written with the completion that makes them true), record every call,
// can be told to fail (fail_next) or to hold a call back (hold), and list misuse in violations().
// Thread-safe; callbacks run inline on the caller's thread unless held.
//
// fake_work_repository is the work_item table; each stage's fake shares it, as the real
// repositories share the database: the stage's final write finishes the item in the same call.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "adapters/db/container_repository.hpp"
#include "adapters/db/ingest_repository.hpp"
#include "adapters/db/matching_repository.hpp"
#include "adapters/db/work_repository.hpp"
#include "tests/support/fakes/fakes.hpp"

namespace ingestd::test {

/// One work item as the fake table keeps it (migration 015's work_item).
struct fake_work_item {
  uuid id;
  std::string stage = "ingest";
  uuid document_id;
  uuid tenant_id;
  /// "in-progress", "completed", "failed", "skipped", "cancelled".
  std::string status = "in-progress";
  std::optional<uuid> token;
  std::string claimed_by;
  /// The claim's lease has not run out (a token without a live lease is a crashed holder's).
  bool lease_live = false;
  /// A claim was granted before (the table's started_at is set).
  bool started = false;
  int32_t attempt_count = 0;
  int32_t crash_count = 0;
  int32_t priority = 50;
  std::string size_class = "small";
  int32_t class_attempts_base = 0;
  std::string last_error;
  std::string error_class;
  /// `ingestd cancel` asked while it ran (cancel_requests reports it).
  bool cancel_requested = false;
  /// Its document's hash is in the known-file set.
  bool known_file = false;
  /// Its message is gone: past due and not seen for longer than any threshold (revive() sends
  /// it again). Any claim or renewal of it is a sign of its message and clears it.
  bool stranded = false;
  /// The back-off record_failure was given last.
  std::optional<std::chrono::seconds> retry_delay;
  int completions = 0;
  int releases = 0;
};

/// A message the database sent in a transaction (ingestd_send): a next stage's work, a move to
/// another size class, a revival.
struct fake_sent_message {
  std::string queue;
  std::string body;
  int32_t priority = 50;
};

/// An audit row (table ingestion_event) and the call whose transaction wrote it: "claim",
/// "complete", "record_failure", "release", "record_cancelled", "append_audit", or a stage's
/// final write ("complete" of the ingest repository, "write_matches", "complete_unpack").
struct fake_audit_row {
  audit_event event;
  std::string written_by;
};

/// A status event the trigger on work_item writes for a change (INGESTION_STARTED, WARNING for
/// a retry, INGESTION_COMPLETED, INGESTION_FAILED, INGESTION_SKIPPED, INGESTION_CANCELLED,
/// MATCHING_COMPLETED, MATCHING_FAILED): what the event sinks (the failure notifier) receive.
struct fake_status_event {
  uuid item;
  std::string type;
};

/// Op names for fail_next and hold: "claim", "renew_leases", "cancel_requests", "complete",
/// "record_failure", "release", "record_cancelled", "append_audit", "revive".
class fake_work_repository : public work_repository, public fault_script {
public:
  void claim(std::vector<claim_request> requests, std::string worker_id, std::chrono::seconds lease,
             callback<std::vector<claim_answer>> done) override;
  void renew_leases(std::vector<claim_ref> refs, std::chrono::seconds lease,
                    callback<std::vector<claim_ref>> done) override;
  void cancel_requests(std::vector<uuid> items, callback<std::vector<uuid>> done) override;
  void complete(std::vector<work_outcome> outcomes,
                callback<std::vector<result<void>>> done) override;
  void record_failure(claim_ref ref, failure_record record, std::chrono::seconds retry_delay,
                      std::vector<audit_event> audit, callback<failure_outcome> done) override;
  void release(claim_ref ref, std::chrono::seconds delay, std::vector<audit_event> audit,
               callback<void> done) override;
  void record_cancelled(claim_ref ref, std::vector<audit_event> audit,
                        callback<void> done) override;
  void append_audit(std::vector<audit_event> events, callback<void> done) override;
  /// The stage's (and class's) stranded items nobody holds, up to the limit, each sent to the
  /// request's queue at its priority; nothing while another node holds the sweep lock.
  void revive(revive_request request, callback<int64_t> done) override;

  // -- the test's side -------------------------------------------------------------------------

  /// Adds an in-progress, unclaimed item of `stage` with `id` (an ingestion's, or the document's
  /// for "match"); returns `id`.
  uuid add(const std::string& stage, const uuid& id, const uuid& document, const uuid& tenant,
           int32_t attempts = 0);
  /// Changes an item as a test needs it (its size class, priority, status, a known file, ...).
  void update(const uuid& id, const std::function<void(fake_work_item&)>& change);
  fake_work_item item(const uuid& id);
  bool has(const uuid& id);

  /// Another worker takes the claim over (as after an expired lease).
  void steal_claim(const uuid& id);
  /// Another worker holds a live claim.
  void hold_by_other(const uuid& id);
  /// The holder of the claim died: its lease runs out with its token still set, so the next
  /// claim counts a crash (and fails the item as poison at max_attempts, or moves it).
  void crash_holder(const uuid& id);
  /// `ingestd cancel`: an item nobody holds becomes cancelled at once; a held one gets a cancel
  /// request that cancel_requests reports.
  void request_cancel(const uuid& id);
  /// Its message is gone and it is stale: the next revive of its stage sends it again.
  void strand(const uuid& id);
  /// Another node holds (true) or releases (false) the cluster-wide lock sweeps run under.
  void hold_sweep_lock_elsewhere(bool held);
  /// Messages the database sends to `queue` also go to `q` (as rows of the Postgres queue).
  void connect(const std::string& queue, std::shared_ptr<fake_queue> q);

  /// Every message sent so far, and the bodies sent to one queue.
  std::vector<fake_sent_message> sent();
  std::vector<std::string> sent_to(const std::string& queue);
  /// The audit trail (all rows, in order), with the call that wrote each.
  std::vector<audit_event> audit();
  std::vector<fake_audit_row> audit_rows();
  /// The status events the trigger wrote, and those of one item.
  std::vector<fake_status_event> status_events();
  std::vector<std::string> status_events_of(const uuid& id);
  /// The size of every claim call and of every renewal batch.
  std::vector<size_t> claim_batch_sizes();
  int renew_calls();
  std::vector<size_t> renew_batch_sizes();
  /// The items of every cancel_requests call.
  std::vector<std::vector<uuid>> cancel_request_calls();
  /// Every revive request so far.
  std::vector<revive_request> revive_calls();
  std::vector<std::string> violations();

  // -- for the stages' fakes: the same table, in the same transaction -------------------------

  /// Whether `ref` holds its item (in progress under this token); a token this fake never
  /// granted, or one whose claim its holder already ended, is listed as a breach (`op` names the
  /// write).
  bool holds(const claim_ref& ref, const std::string& op);
  /// The fenced finish of an item (what every stage's final write does in its transaction): the
  /// audit rows appended whatever the fence says, then completed with its next work added and
  /// sent, or claim_lost. `by` names the write for the audit rows.
  result<void> finish(const work_outcome& outcome, const std::string& by);
  /// ingestd_add_work: a new in-progress item with its message on `work.queue`; an existing item
  /// starts over (reopen) or is left alone (no message). Answers whether a message was sent.
  bool add_work(const next_work& work);

private:
  // Called with mtx_ held.
  bool holds_locked(const claim_ref& ref, const std::string& op);
  void end_token(const uuid& token);
  void send_locked(const std::string& queue, const std::string& body, int32_t priority);
  void append_locked(const std::vector<audit_event>& events, const std::string& by,
                     const uuid* item);
  bool add_work_locked(const next_work& work);
  void changed(const fake_work_item& before, const fake_work_item& after);
  result<void> finish_locked(const work_outcome& outcome, const std::string& by);

  std::map<uuid, fake_work_item> items_;
  std::set<uuid> granted_;
  std::set<uuid> ended_;
  std::map<std::string, std::shared_ptr<fake_queue>> queues_;
  std::vector<fake_sent_message> sent_;
  std::vector<fake_audit_row> audit_;
  std::vector<fake_status_event> events_;
  std::vector<size_t> claim_batches_;
  std::vector<size_t> renew_batches_;
  std::vector<std::vector<uuid>> cancel_calls_;
  std::vector<revive_request> revive_calls_;
  bool sweep_lock_elsewhere_ = false;
};

/// One ingestion as the ingest stage's fake keeps it.
struct fake_ingestion {
  uuid document_id;
  uuid tenant_id;
  ingestion_details details;
  /// Recorded by record_transcription, or with the completion.
  std::optional<transcription_record> transcription;
  /// The result of the completion, or the output kept for review (valid false).
  std::string structured_data;
  bool valid_structured_data = false;
  std::string model;
  std::string review_reason;
  int completions = 0;
  int kept_outputs = 0;
};

/// The ingest stage's port. Op names for fail_next and hold: "load", "record_transcription",
/// "keep_output", "complete".
class fake_ingest_repository : public ingest_repository, public fault_script {
public:
  explicit fake_ingest_repository(std::shared_ptr<fake_work_repository> work)
      : work_(std::move(work)) {}

  void load(uuid id, callback<ingestion_details> done) override;
  void record_transcription(claim_ref ref, transcription_record record,
                            callback<void> done) override;
  void keep_output(claim_ref ref, std::string structured_data, callback<void> done) override;
  /// Each completion: its item finished (work_repository::finish, the audit trail and next work
  /// with it) and, when it held, its result stored.
  void complete(std::vector<ingest_completion> completions,
                callback<std::vector<result<void>>> done) override;

  /// Adds an ingestion of a new document (of `tenant`, or a new one), with its in-progress work
  /// item of `stage` (the claimed-work table); returns the ingestion's id.
  uuid add(const std::string& file_path, const std::string& mime_type = "text/plain",
           int32_t attempts = 0, const std::string& stage = "ingest",
           std::optional<uuid> tenant = std::nullopt);
  /// The providers a reprocess chose for the ingestion (empty: as configured).
  void choose_providers(const uuid& id, const std::string& transcription,
                        const std::string& extraction);
  fake_ingestion row(const uuid& id);
  std::vector<std::string> violations();

private:
  std::shared_ptr<fake_work_repository> work_;
  std::map<uuid, fake_ingestion> rows_;
};

/// One document as the match stage's fake keeps it.
struct fake_matching_document {
  uuid tenant_id;
  matching_subject subject;
  /// The features stored by the last store_features, if any.
  std::optional<match_features> features;
  /// The edges of the last write_matches, as the job gave them.
  std::vector<match_edge> edges;
  int writes = 0;
};

/// The match stage's port. Op names for fail_next and hold: "load", "store_features",
/// "candidates", "write_matches", "matches_of".
class fake_matching_repository : public matching_repository, public fault_script {
public:
  explicit fake_matching_repository(std::shared_ptr<fake_work_repository> work)
      : work_(std::move(work)) {}

  void load(uuid document_id, callback<matching_subject> done) override;
  void store_features(claim_ref ref, match_features features, callback<void> done) override;
  /// The configured candidates (set_candidates) of the tenant, never the document itself, at
  /// most `limit`.
  void candidates(uuid tenant_id, uuid document_id, match_features features, int limit,
                  callback<std::vector<match_document>> done) override;
  /// The edges and the item's finish in one transaction: a failure leaves neither.
  void write_matches(work_outcome outcome, std::vector<match_edge> edges,
                     callback<void> done) override;
  void matches_of(uuid document_id,
                  callback<std::pair<std::vector<stored_match>, std::vector<uuid>>> done) override;

  /// Adds a document of `tenant` and, unless `queued` is false, its match work item in progress
  /// with `attempts` failed attempts; returns its id. `transcription` is the storage key of its
  /// transcription ("" when none).
  uuid add(const uuid& tenant, std::string structured_data = "{}", std::string transcription = {},
           bool queued = true, int32_t attempts = 0);
  /// What candidates() answers from now on (filtered by tenant, the document itself left out).
  void set_candidates(std::vector<match_document> docs);
  fake_matching_document document(const uuid& id);
  /// The limit of every candidates() call.
  std::vector<int> candidate_limits();
  std::vector<std::string> violations();

private:
  std::shared_ptr<fake_work_repository> work_;
  std::map<uuid, fake_matching_document> docs_;
  std::vector<match_document> candidates_;
  std::vector<int> candidate_limits_;
};

/// One container's ingestion as the unpack stage's fake keeps it.
struct fake_container {
  uuid document_id;
  uuid tenant_id;
  container_details details;
  std::string body_text;
  std::string structured_data;
  std::string unpack_error;
  /// The children of its completion, as the job gave them.
  std::vector<unpack_child> children;
  int completions = 0;
};

/// The unpack stage's port. Op names for fail_next and hold: "load", "complete_unpack".
class fake_container_repository : public container_repository, public fault_script {
public:
  explicit fake_container_repository(std::shared_ptr<fake_work_repository> work)
      : work_(std::move(work)) {}

  void load(uuid ingestion_id, callback<container_details> done) override;
  /// The parent's item finished, then each child whose content the tenant does not have yet
  /// added with its work item and message (ingestd_add_work), in one transaction.
  void complete_unpack(work_outcome outcome, unpack_completion completion,
                       callback<unpack_counts> done) override;

  /// Adds a container's ingestion of a new document with its in-progress unpack work item;
  /// returns the ingestion's id.
  uuid add(const std::string& file_path, const std::string& mime_type, int32_t depth = 0);
  /// The tenant has a document with this content already.
  void know(const uuid& tenant, const std::string& content_hash);
  fake_container container(const uuid& id);
  std::vector<std::string> violations();

private:
  std::shared_ptr<fake_work_repository> work_;
  std::map<uuid, fake_container> rows_;
  std::set<std::pair<uuid, std::string>> known_;
};

} // namespace ingestd::test
