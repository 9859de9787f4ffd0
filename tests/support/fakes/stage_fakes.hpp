// In-memory fakes of the matcher, the outbox and the event sinks, in the style of fakes.hpp: they
// keep the contracts of the real adapters (adapters/matching/matcher.hpp,
// adapters/db/outbox_repository.hpp, adapters/notify/event_sink.hpp), record every call, can be
// told to fail (fail_next) or to hold a call back (hold), and list misuse in violations().
// Thread-safe; callbacks run inline on the caller's thread unless held. The match stage's
// database port is faked with the claimed-work table in work_fakes.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "adapters/db/outbox_repository.hpp"
#include "adapters/matching/matcher.hpp"
#include "adapters/notify/event_sink.hpp"
#include "tests/support/fakes/fakes.hpp"

namespace ingestd::test {

/// Answers decide() with `edges` (all the candidates' ids must be known to it: edges to ids
/// that were not candidates are the test's own doing), or with an error: fail_next("decide") for
/// the next call, fail_always() for every call; hold("decide") never answers until unhold().
class fake_matcher : public matcher, public fault_script {
public:
  void decide(match_document doc, std::vector<match_document> candidates,
              callback<std::vector<match_edge>> done) override;
  std::string name() const override { return "fake"; }
  /// As the local matcher's rules when `inline_rules` is set: the stage runs decide() on a CPU
  /// worker.
  bool runs_inline() const override { return inline_rules; }

  /// The edges every decision answers (empty: no match, a real answer).
  void answer(std::vector<match_edge> edges);
  /// Every decision fails with `err` from now on (nullopt: answer again).
  void fail_always(std::optional<error> err);

  int calls();
  /// The document and the candidates' ids of the last call.
  match_document last_document();
  std::vector<uuid> last_candidates();
  std::vector<std::string> violations();

  /// Decide inline, as rules do (set before the job starts).
  bool inline_rules = false;

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
  /// Failed max_attempts times: never taken again unless redelivered.
  bool dead = false;
  /// Sent longer ago than any retention (prune deletes it).
  bool old = false;
};

/// Op names for fail_next and hold: "take", "mark_sent", "mark_failed", "prune".
class fake_outbox : public outbox_repository, public fault_script {
public:
  /// Adds an unsent row (a queue message of `priority`); returns its id.
  int64_t add(std::string destination, std::string body, int32_t priority = 50);
  /// Adds an unsent event row for a sink; returns its id.
  int64_t add_event(std::string destination, std::string event_id, std::string ordering_key);

  /// As the real one for a single relay: event rows ("events:...") only for `sinks`; keyed rows
  /// every time (the relay's previous locks are let go), unkeyed rows when nobody holds them;
  /// dead rows never.
  void take(int limit, std::chrono::seconds hold, std::vector<std::string> sinks,
            callback<std::vector<outbox_row>> done) override;
  void mark_sent(std::vector<int64_t> ids, callback<void> done) override;
  void mark_failed(std::vector<int64_t> ids, std::string error, int max_attempts,
                   callback<int64_t> done) override;
  void dead_rows(int limit, callback<std::vector<dead_outbox_row>> done) override;
  void redeliver(std::vector<int64_t> ids, callback<int64_t> done) override;
  void figures(callback<outbox_figures> done) override;
  /// Deletes the sent rows made old (age_sent); answers how many.
  void prune(std::chrono::seconds retention, callback<int64_t> done) override;
  void register_sinks(std::vector<registered_sink> sinks, callback<void> done) override;
  void emit(std::string type, std::string payload, std::string ordering_key,
            callback<void> done) override;
  /// Answers nothing: the fake keeps no stream.
  void read_stream(int64_t after_id, int limit, callback<std::vector<stream_event>> done) override;
  /// The sinks registered (the last registration of each name) and the types emitted so far.
  std::vector<registered_sink> registered_sinks();
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
  std::vector<registered_sink> sinks_;
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
