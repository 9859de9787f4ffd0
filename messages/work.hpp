// A stage's work on one subject as the generic lifecycle sees it: the claim and the reference
// every later write carries, what a claim answers, a failed attempt, the audit trail's rows and
// the hand-offs a completion makes. The table behind them is work_item (migration 015).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "messages/error.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// A granted claim on a work item: every write after the claim carries its token (fencing), and
/// a write whose token no longer matches fails as claim_lost.
struct claim_ref {
  uuid item;
  uuid token;
};

/// A move of a work item to another size class, whose queue gets its message in the same
/// transaction.
struct work_move {
  std::string size_class;
  std::string queue;
};

/// One claim, as a stage's job asks for it.
struct claim_request {
  /// The work item the queue message names.
  uuid item;
  /// A fresh token the claimer made; the claim stores it.
  uuid token;
  /// The claimer's stage ("ingest"): an item of another stage is unknown to it.
  std::string stage;
  /// The claimer's size class: an item in another class has moved (its message is elsewhere).
  /// Empty: the stage has no classes.
  std::string size_class;
  /// A crash (a lease that ran out with its token set) counts as an attempt; the crash that
  /// reaches this many attempts fails the item as poison instead of claiming it.
  int32_t max_attempts = 3;
  /// An item whose document's hash is in the known-file set ends `skipped` instead.
  bool skip_known_files = false;
  /// A crash taken over moves the item to this class instead of claiming it.
  std::optional<work_move> crash_move;
  /// The stage keeps an audit trail: crashes, poison, known files and moves found by the claim
  /// are recorded in it.
  bool audit = false;
};

/// How a claim ended for one request.
enum class claim_outcome : uint8_t {
  /// Claimed: the job runs.
  granted,
  /// Another worker holds a live claim on it: its message stays for that worker.
  held,
  /// It has its final status (completed, failed, skipped, cancelled), possibly from this very
  /// claim (a known file, a poison crash): its message is done with.
  finished,
  /// It belongs to another size class now, whose queue has its message: this one is stale.
  moved,
  /// No such item for this stage.
  unknown,
};

std::string_view to_string(claim_outcome x);

/// A granted claim, as the job needs it.
struct claimed_work {
  uuid item;
  uuid token;
  uuid document_id;
  uuid tenant_id;
  /// Attempts before this one: the back-off before the next is retry_backoff[attempt_count].
  int32_t attempt_count = 0;
  /// 0..100, lower first.
  int32_t priority = 50;
  /// The size class it runs in ("small", "large") and attempt_count when it entered it.
  std::string size_class = "small";
  int32_t class_attempts_base = 0;
  /// No claim of the item came before this one (since it was added, or reopened): nothing an
  /// earlier attempt stored can exist, and a stage need not look for it.
  bool first_claim = false;

  claim_ref ref() const { return claim_ref{item, token}; }
};

/// The answer to one claim request.
struct claim_answer {
  claim_outcome outcome = claim_outcome::unknown;
  /// Set when granted.
  claimed_work work;
  /// Why, when not granted: the final status, "poison: ...", "known_file", the class it moved
  /// to; for the job's log line.
  std::string detail;
};

/// One step of the audit trail (a row of the view ingestion_event), written with the state
/// change it leads to.
struct audit_event {
  uuid item;
  /// The step: "parse", "claim", "fetch", "transcribe", "extract", "complete", ...
  std::string step;
  /// "ok", "skipped", "transient", "permanent", "claim_lost", ...
  std::string outcome;
  std::string detail;
  int64_t duration_ms = 0;
  std::string worker_id;
  /// Unix milliseconds.
  int64_t at_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, audit_event& x) {
  return f(caf::meta::type_name("audit_event"), x.item, x.step, x.outcome, x.detail, x.duration_ms,
           x.worker_id, x.at_ms);
}

/// The work of a next stage that a completion adds in its transaction, with its queue message.
struct next_work {
  uuid item;
  std::string stage;
  uuid document_id;
  uuid tenant_id;
  int32_t priority = 50;
  std::string size_class = "small";
  /// The queue its message goes to.
  std::string queue;
  /// An item that exists already starts over (in progress, no attempts, no claim); otherwise it
  /// is left as it is and no message is sent.
  bool reopen = false;
};

/// The generic part of a stage's outcome, written in one transaction with what the stage
/// stores: the item completed and its claim cleared (fenced), its audit trail, and the next
/// stages' work.
struct work_outcome {
  claim_ref ref;
  std::vector<audit_event> audit;
  std::vector<next_work> next;
  /// Why a person must look at the result (e.g. "text_unavailable: ..."): the item's
  /// last_error. Empty: nothing to add.
  std::string remark = {};
};

/// A failed attempt.
struct failure_record {
  ingestd::error error;
  /// Attempts after which the item fails for good; a permanent error fails it at once.
  int32_t max_attempts = 3;
  /// The item moves to another size class and stays in progress whatever the error, its
  /// message sent to that class's queue.
  std::optional<work_move> move;
  /// The attempt crashed (a decoder helper died on the document: decoder_crash()): counted in
  /// crash_count too, and when it is final the item fails as poison, as a crash found by a claim.
  bool crash = false;
};

/// What recording a failed attempt left behind.
struct failure_outcome {
  int32_t attempt_count = 0;
  /// true when the item is now `failed` (final); false when it stays in progress.
  bool failed = false;
};

} // namespace ingestd
