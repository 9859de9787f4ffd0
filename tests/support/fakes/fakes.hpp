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
  void remove(std::vector<std::string> receipts,
              callback<std::vector<batch_entry_result>> done) override;
  void change_visibility(std::vector<visibility_change> changes,
                         callback<std::vector<batch_entry_result>> done) override;
  /// Sends every message (fail_next("send") fails the whole call).
  void send(std::vector<outgoing_message> messages,
            callback<std::vector<batch_entry_result>> done) override;
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
  std::map<std::string, entry> entries_; // by id
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
  void put(std::string key, std::string bytes, std::string content_type,
           callback<void> done) override;
  void exists(std::string key, callback<bool> done) override;
  void remove(std::string key, callback<void> done) override;
  void list(std::string prefix, callback<std::vector<std::string>> done) override;
  std::string name() const override { return "fake"; }

  void set(const std::string& key, std::string bytes);
  std::optional<std::string> object(const std::string& key);
  int puts();

private:
  std::map<std::string, std::string> objects_;
  int puts_ = 0;
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
