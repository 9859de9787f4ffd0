// In-memory fakes of the ports for tests of logic (the actor tests): they keep the semantics the
// real adapters promise (fenced writes, stale receipts, callbacks exactly once), record every
// call, can be told to fail or to hold a call back, and list any misuse in violations().
// Callbacks run inline on the caller's thread unless held.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/db/repository.hpp"
#include "adapters/extraction/extractor.hpp"
#include "adapters/ocr/transcriber.hpp"
#include "adapters/queue/queue.hpp"
#include "adapters/storage/object_store.hpp"

namespace ingestd::test {

/// Errors to return, and calls to hold, by operation name ("claim", "complete", "get", ...).
class fault_script {
public:
  /// The next call of `op` fails with `err` (queue several for several calls).
  void fail_next(const std::string& op, error err);
  /// Calls of `op` are held from now on until unhold(); their callbacks are not called.
  void hold(const std::string& op);
  /// Stops holding `op` and completes every held call of it (in order).
  void unhold(const std::string& op);
  size_t held(const std::string& op);

protected:
  std::optional<error> take_failure(const std::string& op);
  /// true when the call was held (the continuation runs at release).
  bool maybe_hold(const std::string& op, std::function<void()> continuation);
  std::vector<std::string>& violations_ref() { return violations_; }

  std::mutex mtx_;
  std::vector<std::string> violations_;

private:
  std::map<std::string, std::deque<error>> failures_;
  std::map<std::string, bool> holding_;
  std::map<std::string, std::vector<std::function<void()>>> held_;
};

class fake_queue : public queue, public fault_script {
public:
  struct entry {
    queue_message msg;
    bool visible = true;
    bool deleted = false;
    std::chrono::seconds last_visibility{0};
  };

  /// Adds a message (visible at once); returns its id.
  std::string push(const std::string& body);
  /// Receives complete at once when messages are visible; otherwise they wait (the test
  /// completes them with push() + deliver_pending()).
  void receive(int max_messages, std::chrono::seconds wait, std::chrono::seconds visibility,
               callback<std::vector<queue_message>> done) override;
  void remove(std::vector<std::string> receipts, callback<std::vector<batch_entry_result>> done) override;
  void change_visibility(std::vector<visibility_change> changes,
                         callback<std::vector<batch_entry_result>> done) override;
  /// Sends every message (fail_next("send") fails the whole call).
  void send(std::vector<outgoing_message> messages, callback<std::vector<batch_entry_result>> done) override;
  /// Visible and in-flight counts (fail_next("stats") fails it).
  void stats(callback<queue_stats> done) override;
  std::string name() const override { return "fake"; }

  /// Completes waiting receives with whatever is visible now.
  void deliver_pending();
  /// Completes waiting receives with nothing, as when a long poll's wait runs out.
  void end_waits();
  /// Makes a message visible again, as if its visibility timeout ran out.
  void expire(const std::string& id);

  std::vector<std::string> deleted_ids();
  std::vector<visibility_change> visibility_calls();
  std::vector<int> receive_sizes();
  std::vector<std::string> sent_bodies();
  /// The priority the last message with this body was sent with (-1: none sent).
  int32_t sent_priority(const std::string& body);
  size_t pending_receives();
  std::vector<std::string> violations();

  /// Receipts that visibility changes and deletes refuse (batch entry failures).
  void refuse_receipt(const std::string& receipt);
  /// The next send of a message with this body refuses that entry (a batch entry failure);
  /// the other entries of the batch are sent.
  void refuse_next_send(const std::string& body);

private:
  std::vector<queue_message> take_visible(int max, std::chrono::seconds visibility);
  std::map<std::string, entry> entries_;  // by id
  std::vector<std::string> order_;
  std::map<std::string, std::string> receipt_to_id_;
  std::vector<std::pair<int, callback<std::vector<queue_message>>>> waiting_;
  std::vector<std::string> deleted_;
  std::vector<visibility_change> visibility_calls_;
  std::vector<int> receive_sizes_;
  std::vector<std::string> sent_;
  std::map<std::string, int32_t> sent_priorities_;
  std::vector<std::string> refused_;
  std::vector<std::string> refused_sends_;
  int next_id_ = 0;
  int next_receipt_ = 0;
};

class fake_store : public object_store, public fault_script {
public:
  void get(std::string key, size_t max_bytes, callback<std::string> done) override;
  void put(std::string key, std::string bytes, std::string content_type, callback<void> done) override;
  void exists(std::string key, callback<bool> done) override;
  std::string name() const override { return "fake"; }

  void set(const std::string& key, std::string bytes);
  std::optional<std::string> object(const std::string& key);
  int puts();

private:
  std::map<std::string, std::string> objects_;
  int puts_ = 0;
};

/// One ingestion row as the fake database keeps it.
struct fake_row {
  claimed_ingestion ingestion;
  std::string status = "in-progress";
  std::optional<uuid> token;
  bool lease_live = false;
  std::string structured_data;
  std::string last_error;
  std::string error_class;
  std::string transcription_file_path;
  int completions = 0;
  /// `ingestd cancel` asked while it ran (the heartbeat's cancel_requests reports it).
  bool cancel_requested = false;
  int32_t priority = 50;
};

class fake_repository : public repository, public fault_script {
public:
  /// Adds an in-progress ingestion with its document; returns the ingestion id.
  uuid add(const std::string& file_path, const std::string& mime_type = "text/plain", int attempts = 0);

  /// Can fail or be held.
  void claim(std::vector<claim_request> requests, std::string worker_id, std::chrono::seconds lease,
             callback<std::vector<std::optional<claimed_ingestion>>> done) override;
  void states(std::vector<uuid> ids, callback<std::vector<ingestion_state>> done) override;
  void record_transcription(lease_ref ref, transcription_record record, callback<void> done) override;
  void complete(std::vector<completion> completions, callback<std::vector<result<void>>> done) override;
  void record_failure(lease_ref ref, failure_record record, std::chrono::seconds retry_delay,
                      callback<failure_outcome> done) override;
  void renew_leases(std::vector<lease_ref> refs, std::chrono::seconds lease,
                    callback<std::vector<lease_ref>> done) override;
  void release(lease_ref ref, callback<void> done) override;
  void cancel_requests(std::vector<uuid> ids, callback<std::vector<uuid>> done) override;
  void record_cancelled(lease_ref ref, callback<void> done) override;
  void append_events(std::vector<audit_event> events, callback<void> done) override;
  /// Every in-progress ingestion without a live lease, up to `limit` (the fake keeps no due
  /// times); nothing while another node holds the sweep lock. Can fail or be held.
  void rescue_stranded(std::chrono::seconds stale_threshold, int limit,
                       callback<std::vector<stranded_ingestion>> done) override;

  fake_row row(const uuid& id);
  /// Another worker takes the claim over (as after an expired lease).
  void steal_claim(const uuid& id);
  /// Sets the size class (intake's routing: "small", "large").
  void set_size_class(const uuid& id, const std::string& size_class);
  void set_priority(const uuid& id, int32_t priority);
  /// The providers a reprocess chose for the ingestion (empty: as configured).
  void choose_providers(const uuid& id, const std::string& transcription, const std::string& extraction);
  /// Another worker holds a live claim.
  void hold_by_other(const uuid& id);
  /// `ingestd cancel`: a queued (unheld) ingestion becomes cancelled at once; a running one gets
  /// a cancel request that cancel_requests reports.
  void request_cancel(const uuid& id);
  /// The holder of the claim died: its lease runs out with its token still set, so the next
  /// claim counts a crash (and fails the ingestion as poison at max_attempts).
  void crash_holder(const uuid& id);
  std::vector<audit_event> events();
  int renew_calls();
  std::vector<size_t> renew_batch_sizes();
  /// Another node holds (true) or releases (false) the cluster-wide lock that sweeps run under.
  void hold_sweep_lock_elsewhere(bool held);
  /// The stale threshold of every rescue_stranded call so far.
  std::vector<std::chrono::seconds> rescue_calls();
  std::vector<std::string> violations();

private:
  bool fenced(const lease_ref& ref) const;
  std::map<uuid, fake_row> rows_;
  std::vector<audit_event> events_;
  std::vector<size_t> renew_batches_;
  std::vector<std::chrono::seconds> rescue_calls_;
  bool sweep_lock_elsewhere_ = false;
};

class fake_transcriber : public transcriber, public fault_script {
public:
  /// `name`: the provider it stands for (a node's named providers, the transcription's provider).
  explicit fake_transcriber(std::string name = "fake") : name_(std::move(name)) {}
  /// The file's bytes are taken as its text; quality 0.95.
  void transcribe(transcription_request request, callback<transcription> done) override;
  std::string name() const override { return name_; }
  bool waits_for_cpu() const override { return cpu_; }
  int calls();

  /// From now on (true) requests wait for a CPU worker, as with the local provider, until
  /// start_waiting() (`started`, then the answer) or expire_waiting() (ocr.busy).
  void wait_for_cpu(bool on);
  void start_waiting();
  void expire_waiting();

private:
  struct waiting {
    std::function<void()> started;
    callback<transcription> done;
    result<transcription> answer;
  };
  std::string name_;
  int calls_ = 0;
  bool cpu_ = false;
  std::vector<waiting> waiting_;
};

class fake_extractor : public extractor, public fault_script {
public:
  /// `name`: the provider it stands for (a node's named providers).
  explicit fake_extractor(std::string name = "fake") : name_(std::move(name)) {}
  /// Answers `next_result` (a valid, reconciling invoice with high confidence by default).
  void extract(std::string text, callback<extraction> done) override;
  /// As extract(), keeping `context` for the test to call as a provider's limiter would.
  void extract_with(std::string text, call_context context, callback<extraction> done) override;
  std::string name() const override { return name_; }
  bool deterministic() const override { return deterministic_answers; }
  int calls();
  /// The context of the last extract_with() call (empty ones for a plain extract()).
  call_context last_context();
  extraction next_result = valid_invoice();
  /// Answer like the local rules: the gate's verdict is final at the first attempt.
  bool deterministic_answers = false;
  static extraction valid_invoice();

private:
  std::string name_;
  int calls_ = 0;
  call_context hooks_;
};

} // namespace ingestd::test
