// In-memory fakes of the match stage's ports and of the outbox, in the style of fakes.hpp: they
// keep the contracts of the real adapters (adapters/db/matching_repository.hpp,
// adapters/matching/matcher.hpp, adapters/db/outbox_repository.hpp), record every call, can be
// told to fail (fail_next) or to hold a call back (hold), and list misuse in violations().
// Thread-safe; callbacks run inline on the caller's thread unless held.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "adapters/db/matching_repository.hpp"
#include "adapters/db/outbox_repository.hpp"
#include "adapters/notify/event_sink.hpp"
#include "adapters/matching/matcher.hpp"
#include "tests/support/fakes/fakes.hpp"

namespace ingestd::test {

/// One document's matching columns as the fake database keeps them.
struct fake_matching_row {
  /// Everything a claim answers but the token and the attempts.
  matching_claim doc;
  /// "pending", "in-progress", "succeeded", "failed", or "" (NULL: not queued for matching).
  std::string status = "pending";
  /// Deliveries so far (each claim counts one; a release gives it back).
  int32_t matching_attempts = 0;
  std::optional<uuid> token;
  bool lease_live = false;
  std::string matching_error;
  bool failed_at_set = false;
  /// The features stored by the last store_features, if any.
  std::optional<match_features> features;
  /// The edges of the last write_matches, as the job gave them.
  std::vector<match_edge> edges;
  int writes = 0;
  int releases = 0;
  /// Its matching message is gone (lose_message): rescue_stranded answers it once.
  bool message_lost = false;
};

/// Op names for fail_next and hold: "claim", "state", "store_features", "candidates",
/// "write_matches", "record_failure", "release", "renew_leases", "matches_of".
class fake_matching_repository : public matching_repository, public fault_script {
public:
  /// Adds a document of `tenant` with the given matching status and deliveries so far; returns
  /// its id. `transcription` is the storage key of its transcription ("" when none).
  uuid add(const uuid& tenant, std::string structured_data = "{}", std::string transcription = {},
           std::string status = "pending", int32_t attempts = 0);

  void claim(uuid document_id, uuid claim_token, std::string worker_id, std::chrono::seconds lease,
             int32_t max_attempts, callback<std::optional<matching_claim>> done) override;
  void state(uuid document_id, callback<ingestion_state> done) override;
  void store_features(lease_ref ref, match_features features, callback<void> done) override;
  /// The configured candidates (set_candidates) of the tenant, never the document itself, at
  /// most `limit`.
  void candidates(uuid tenant_id, uuid document_id, match_features features, int limit,
                  callback<std::vector<match_document>> done) override;
  void write_matches(lease_ref ref, std::vector<match_edge> edges, callback<void> done) override;
  void record_failure(lease_ref ref, failure_record record, callback<failure_outcome> done) override;
  void release(lease_ref ref, callback<void> done) override;
  void renew_leases(std::vector<lease_ref> refs, std::chrono::seconds lease,
                    callback<std::vector<lease_ref>> done) override;
  void matches_of(uuid document_id,
                  callback<std::pair<std::vector<stored_match>, std::vector<uuid>>> done) override;
  /// The pending documents whose message was lost (lose_message), each once; "rescue" can fail.
  void rescue_stranded(std::string queue_name, std::chrono::seconds stale_threshold, int limit,
                       callback<std::vector<uuid>> done) override;

  /// The document's matching message is gone (e.g. dead-lettered while the document is pending).
  void lose_message(const uuid& id);
  /// The queue name and threshold of every rescue_stranded call.
  std::vector<std::pair<std::string, std::chrono::seconds>> rescue_calls();

  /// What candidates() answers from now on (filtered by tenant, the document itself left out).
  void set_candidates(std::vector<match_document> docs);

  fake_matching_row row(const uuid& id);
  /// Another worker takes the claim over (as after an expired lease).
  void steal_claim(const uuid& id);
  /// Another worker holds a live claim (the document is in progress, its delivery counted).
  void hold_by_other(const uuid& id);
  /// The holder of the claim died: its lease runs out with its token still set, so the next
  /// claim counts the crash (and fails the document as poison at max_attempts deliveries).
  void crash_holder(const uuid& id);

  int renew_calls();
  std::vector<size_t> renew_batch_sizes();
  /// The limit of every candidates() call.
  std::vector<int> candidate_limits();
  std::vector<std::string> violations();

private:
  /// The write's token is the document's live one. A token the caller never got, or one whose
  /// claim the caller itself ended (succeeded, failed, released), is a breach of the contract
  /// (listed); one superseded by another worker's claim is the ordinary claim_lost.
  bool fenced(const lease_ref& ref, const char* op);
  void end_token(const uuid& token);

  std::map<uuid, fake_matching_row> rows_;
  std::vector<match_document> candidates_;
  std::set<uuid> granted_;
  std::set<uuid> ended_;
  std::vector<size_t> renew_batches_;
  std::vector<int> candidate_limits_;
  std::vector<std::pair<std::string, std::chrono::seconds>> rescue_calls_;
};

/// Answers decide() with `edges` (all the candidates' ids must be known to it: edges to ids
/// that were not candidates are the test's own doing), or with an error: fail_next("decide") for
/// the next call, fail_always() for every call; hold("decide") never answers until unhold().
class fake_matcher : public matcher, public fault_script {
public:
  void decide(match_document doc, std::vector<match_document> candidates,
              callback<std::vector<match_edge>> done) override;
  std::string name() const override { return "fake"; }

  /// The edges every decision answers (empty: no match, a real answer).
  void answer(std::vector<match_edge> edges);
  /// Every decision fails with `err` from now on (nullopt: answer again).
  void fail_always(std::optional<error> err);

  int calls();
  /// The document and the candidates' ids of the last call.
  match_document last_document();
  std::vector<uuid> last_candidates();
  std::vector<std::string> violations();

private:
  std::vector<match_edge> edges_;
  std::optional<error> always_;
  int calls_ = 0;
  match_document last_doc_;
  std::vector<uuid> last_candidates_;
};

/// One outbox row as the fake keeps it.
struct fake_outbox_row {
  outbox_row row;
  bool sent = false;
  /// Taken and not yet marked: other takes skip it (until expire_holds()).
  bool held = false;
  int failures = 0;
  std::string last_error;
  /// Sent longer ago than any retention (prune deletes it).
  bool old = false;
};

/// Op names for fail_next and hold: "take", "mark_sent", "mark_failed", "prune".
class fake_outbox : public outbox_repository, public fault_script {
public:
  /// Adds an unsent row; returns its id.
  int64_t add(std::string destination, std::string body);
  /// Adds an unsent event row for a sink; returns its id.
  int64_t add_event(std::string destination, std::string event_id, std::string ordering_key);

  /// As the real one: event rows ("events:...") only for `sinks`, and a keyed row waits while an
  /// earlier unsent row of its key and destination is held.
  void take(int limit, std::chrono::seconds hold, std::vector<std::string> sinks,
            callback<std::vector<outbox_row>> done) override;
  void mark_sent(std::vector<int64_t> ids, callback<void> done) override;
  void mark_failed(std::vector<int64_t> ids, std::string error, callback<void> done) override;
  /// Deletes the sent rows made old (age_sent); answers how many.
  void prune(std::chrono::seconds retention, callback<int64_t> done) override;
  void register_sinks(std::vector<std::string> sinks, callback<void> done) override;
  void emit(std::string type, std::string payload, std::string ordering_key,
            callback<void> done) override;
  /// Answers nothing: the fake keeps no stream.
  void read_stream(int64_t after_id, int limit, callback<std::vector<stream_event>> done) override;
  /// The sinks registered and the types emitted so far.
  std::vector<std::string> registered_sinks();
  std::vector<std::string> emitted();

  /// The row was sent longer ago than any retention.
  void age_sent(int64_t id);
  /// Every hold runs out (a relay that died).
  void expire_holds();

  std::optional<fake_outbox_row> row(int64_t id);
  size_t size();
  /// The limit of every take.
  std::vector<int> take_limits();
  /// The retention of every prune.
  std::vector<std::chrono::seconds> prune_calls();
  std::vector<std::string> violations();

private:
  std::map<int64_t, fake_outbox_row> rows_;
  int64_t next_id_ = 0;
  std::vector<int> take_limits_;
  std::vector<std::chrono::seconds> prune_calls_;
  std::vector<std::string> sinks_;
  std::vector<std::string> emitted_;
};

/// The event sink port (adapters/notify/event_sink.hpp): records each delivery in order; while
/// down, every delivery fails (transient). Op name for fail_next and hold: "deliver".
class fake_event_sink : public event_sink, public fault_script {
public:
  void deliver(sink_event event, callback<void> done) override;
  void set_down(bool down);
  /// The event ids delivered (accepted), in order, duplicates included.
  std::vector<std::string> delivered();
  /// Deliveries refused (down or failed).
  int refused();
  std::vector<std::string> violations();

private:
  bool down_ = false;
  int refused_ = 0;
  std::vector<std::string> delivered_;
};

} // namespace ingestd::test
