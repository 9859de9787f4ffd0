// The job actor: one claim's lifecycle for its stage, from the queue message to the
// acknowledgement. The stage's steps (actors/stage.hpp: ingest_job.cpp, match_job.cpp) run in
// the middle, through the job_handle; everything around them is shared by every stage.
//
//   parse ──invalid──────────────────────────────────────────────► ack ─► done (invalid)
//     │
//   claim ──not claimed──► state ──finished/unknown───────────────► ack ─► done (skipped)
//     │         │                └─held by another / claimable──────────► done (skipped, left)
//     │         └─error──────────────────────────────────────────────────► done (abandoned)
//   track (heartbeat)
//     │
//   the stage's steps ─► its outcome stored (completed()) ─► untrack ─► ack ─► done (completed)
//     │
//   database unavailable (connection lost mid-job), or no CPU worker in time ─► untrack
//     ─► release claim ─► visibility 0 ─► done (released; no attempt counted)
//   any other error ─► fail: record_failure ──failed──► notify ─► untrack ─► ack* ─► done (failed)
//                            │             └─in progress─► untrack ─► visibility = backoff ─► done (retrying)
//                            └─error or timeout──────────► untrack ─► done (abandoned; message and lease expire)
//   claim_lost anywhere, or lost from the heartbeat ─► untrack (release) ─► done (lost)
//   cancel (the heartbeat saw `ingestd cancel`) while working ─► at the next step boundary (the
//     current step's answer, or its deadline) ─► untrack ─► record_cancelled ─► ack ─► done
//     (cancelled); the step's result is dropped, so nothing half-written follows
//   stop (shutdown) ─► untrack ─► release claim ─► visibility 0 ─► done (released)
//                     (a stop during the claim waits for its answer and gives back what it granted:
//                      a claim left to expire counts as a crash)
//   size classes (seed 004), the small class only: a timeout or class_max_attempts failures ─►
//     record_failure (escalate: the row moves to the large class) ─► hand over ─► done (escalated);
//     a claim that finds its row large (a crash moved it) ─► release claim ─► hand over
//     (hand over: the id sent to the large class's queue, then this message acked)
//
// (*) not deleted when the stage leaves it for the queue's dead-letter redrive. Every step is
// a port call with a deadline (settings.step_timeout); a late completion of an abandoned step is ignored.
// The deadline is the actor's receive timeout: a step starts while the job handles a message and
// ends with the next one, so "no message for step_timeout" is "the step ran past its deadline".
// Unlike a delayed message per step, that is one cancellable clock entry per job, dropped when
// the job ends, so finished jobs are freed at once rather than held until their deadlines pass.
//
// The phase (job_phase) runs parsing ─► claiming ─► working ─► storing_outcome ─► outcome_stored
// ─► finished; a stop before storing_outcome turns any of them into releasing. The file
// reads in that order: the state, how a step runs, the actor's messages, each step from parse to
// finish, then the failure path and the two ways out that come from outside (lost, stop).
#include "actors/job.hpp"

#include <limits>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/ingest_job.hpp"
#include "adapters/support/log.hpp"
#include "messages/text.hpp"

namespace ingestd {

namespace {

using clock = std::chrono::steady_clock;

int64_t unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

/// Where the job is in its lifecycle; what a 'lost' notice or a stop still changes depends on it.
enum class job_phase : uint8_t {
  parsing,         ///< reading the message body
  claiming,        ///< claiming (or, refused, asking for the state)
  working,         ///< claimed: the stage's steps
  storing_outcome, ///< the final write (the stage's outcome or record_failure), fenced by the token
  outcome_stored,  ///< the outcome is in the database: only the ack or the back-off is left
  releasing,       ///< shutdown: the claim and the message are being given back
  finished,        ///< done: the actor quits, and anything still in flight is stale
};

// The lifecycle's own steps; the stage names its own (actors/ingest_job.cpp, match_job.cpp).
namespace steps {
constexpr std::string_view parse = "parse";
constexpr std::string_view claim = "claim";
constexpr std::string_view states = "states";
constexpr std::string_view record_failure = "record_failure";
constexpr std::string_view backoff = "backoff";
constexpr std::string_view events = "events";
constexpr std::string_view ack = "ack";
constexpr std::string_view release = "release";
constexpr std::string_view cancel = "cancel";
constexpr std::string_view escalate = "escalate";
} // namespace steps

class handle_impl;

struct job_state {
  static inline const char* name = "ingestd.job";

  std::shared_ptr<worker_context> ctx;
  std::shared_ptr<const ingestd::stage> stage;
  std::unique_ptr<stage_job> work;
  std::unique_ptr<handle_impl> handle;
  heartbeat_actor heartbeat;
  queue_message msg;

  job_phase phase = job_phase::parsing;
  /// The id the message names (an ingestion's, a document's).
  uuid id;
  claimed_work claim;
  /// Two facts beside the phase, as neither follows from it. `claimed`: a claim was granted; it
  /// stays true through releasing and finished, where it decides whether there is a claim to give
  /// back, and from then on the audit trail is written. `tracked`: the heartbeat holds the claim;
  /// within storing_outcome it is true while completing and false while recording a failure
  /// (untracked first), and the heartbeat itself clears it when it reports the claim lost.
  bool claimed = false;
  bool tracked = false;
  /// The ingestion was cancelled while the job worked: it stops at the next step boundary.
  bool cancel_requested = false;

  /// The current step: its sequence number (stale completions are ignored), name, start, and
  /// what to do if its deadline passes first.
  uint64_t seq = 0;
  std::string_view step = steps::parse;
  clock::time_point step_started;
  std::function<void(error)> on_timeout;
  /// The step waits for a CPU worker or for a provider's limits: its deadline does not run (the
  /// CPU pool and the provider's line answer work that waits too long with never_started()).
  bool step_waiting = false;

  clock::time_point started = clock::now();
  std::vector<audit_event> events;

  lease_ref lease() const { return lease_ref{claim.id, claim.claim_token}; }
};

using job_ptr = job_actor::stateful_pointer<job_state>;

// The lifecycle, in the order this file defines it.
void parse(job_ptr self);
void claim(job_ptr self);
void not_claimed(job_ptr self);
void track(job_ptr self);
void untrack(job_ptr self);
void ack(job_ptr self, job_result outcome, std::string detail, std::string error_class = "none");
void delete_message(job_ptr self, job_result outcome, std::string detail, std::string error_class);
void finish(job_ptr self, job_result result, std::string detail, std::string_view error_class = "none");
void fail(job_ptr self, const error& err, std::string structured_data = {});
void back_off(job_ptr self, std::chrono::seconds delay, std::string detail, std::string error_class);
void lost(job_ptr self, std::string reason);
void release(job_ptr self);
void give_back(job_ptr self, std::string reason);
void deadline_passed(job_ptr self);
void cancel_requested(job_ptr self);
void cancel(job_ptr self);
void hand_over(job_ptr self, std::string detail, std::string error_class);

/// The fields every log line about this job carries (seed 001's, with the stage and the tenant):
/// the node, the stage, the current step, the ingestion (stages whose message names one), the
/// document and tenant once claimed, the attempt and the queue message.
std::vector<log::field> log_fields(const job_state& st) {
  auto known = [](bool yes, const uuid& id) { return yes && !id.is_nil() ? id.str() : std::string{}; };
  std::vector<log::field> f;
  f.reserve(8);
  f.emplace_back("worker_id", st.ctx->settings.worker_id);
  f.emplace_back("stage", st.stage->name);
  f.emplace_back("step", st.step);
  if (st.stage->audit)  // the message names an ingestion (ingest, unpack), not a document (match)
    f.emplace_back("ingestion_id", known(true, st.id));
  f.emplace_back("document_id", st.claimed ? known(true, st.claim.document_id) : known(!st.stage->audit, st.id));
  f.emplace_back("tenant_id", known(st.claimed, st.claim.tenant_id));
  f.emplace_back("attempt", static_cast<int64_t>(st.claim.attempt_count + (st.claimed ? 1 : 0)));
  f.emplace_back("message_id", st.msg.id);
  return f;
}

/// The deadline of each step of the stage's jobs.
std::chrono::seconds step_timeout_of(const job_state& st) {
  return st.stage->step_timeout.count() > 0 ? st.stage->step_timeout : st.ctx->settings.step_timeout;
}

// ---- how a step runs -----------------------------------------------------------------------

void begin_step(job_state& st, std::string_view step) {
  st.step = step;
  st.step_started = clock::now();
}

/// Starts a step and returns the function that posts its continuation: it runs inside the
/// actor only while the step is still current (not abandoned by a deadline, a stop or lost).
std::function<void(std::function<void()>)> begin_request(job_ptr self, std::string_view step,
                                                         std::function<void(error)> on_timeout) {
  auto& st = self->state;
  auto seq = ++st.seq;
  begin_step(st, step);
  st.on_timeout = std::move(on_timeout);
  auto me = caf::actor_cast<caf::actor>(self);
  return [me, seq](std::function<void()> fn) {
    caf::anon_send(me, resume_atom_v, seq, continuation{std::move(fn)});
  };
}

/// Starts a port call as the job's current step and returns at once: `start` gets the callback
/// to hand to the port; `next` runs later inside the actor with the result, or with a
/// "step.timeout" error if the step's deadline passes first.
template <class T, class Start, class Next>
void request_step(job_ptr self, std::string_view step, Start start, Next next) {
  auto post = begin_request(self, step, [next](error e) mutable { next(result<T>{std::move(e)}); });
  start(callback<T>{[post, next](result<T> r) mutable {
    post([next, r = std::move(r)]() mutable { next(std::move(r)); });
  }});
}

/// Records the current step's duration and outcome (audit trail once claimed, metrics always).
void step_done(job_ptr self, std::string_view outcome, std::string detail = {}) {
  auto& st = self->state;
  auto elapsed = clock::now() - st.step_started;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
  st.ctx->metrics->step_duration(st.stage->name, st.step, std::chrono::duration<double>(elapsed).count());
  if (log::enabled(log::level::debug))
    log::write_with(log::level::debug, "step finished", log_fields(st),
                    {{"status", outcome}, {"duration_ms", static_cast<int64_t>(ms)}, {"detail", detail}});
  if (st.claimed && st.stage->audit)
    st.events.push_back(audit_event{st.id, std::string{st.step}, std::string{outcome},
                                    std::move(detail), ms, st.ctx->settings.worker_id, unix_ms()});
}

/// The step's port call failed: the audit trail records the error, then the failure path runs.
void step_failed(job_ptr self, const error& err) {
  step_done(self, to_string(err.cls), err.describe());
  fail(self, err);
}

/// The job_handle the stage's steps run through.
class handle_impl final : public job_handle {
public:
  explicit handle_impl(job_ptr self) : self_(self) {}

  void begin_local(std::string_view step) override { begin_step(self_->state, step); }
  void step_done(std::string_view outcome, std::string detail) override {
    ingestd::step_done(self_, outcome, std::move(detail));
  }
  void step_failed(const error& err) override { ingestd::step_failed(self_, err); }
  void fail(const error& err, std::string structured_data) override {
    ingestd::fail(self_, err, std::move(structured_data));
  }
  void storing_outcome() override { self_->state.phase = job_phase::storing_outcome; }
  void completed() override {
    self_->state.phase = job_phase::outcome_stored;
    ingestd::step_done(self_, "ok");
    ack(self_, job_result::completed, "");
  }
  std::function<void()> wait_for_cpu() override {
    self_->state.step_waiting = true;
    return waiting_notice(false);
  }
  call_context port_call() override {
    call_context c{waiting_notice(true), waiting_notice(false), {}};
    for (auto& f : log_fields(self_->state))
      c.log_fields.push_back({std::string{f.key}, f.value, f.number});
    return c;
  }
  const std::shared_ptr<worker_context>& context() const override { return self_->state.ctx; }
  const claimed_work& claim() const override { return self_->state.claim; }

protected:
  std::function<void(std::function<void()>)> begin(std::string_view step,
                                                   std::function<void(error)> on_timeout) override {
    self_->state.step_waiting = false;
    return begin_request(self_, step, std::move(on_timeout));
  }

private:
  /// A notice (from any thread) that the current step waits, or goes on. It is a message to the
  /// job, which restarts the receive timeout: the step's deadline runs from then on.
  std::function<void()> waiting_notice(bool waiting) const {
    auto self = self_;
    return [me = caf::actor_cast<caf::actor>(self_), seq = self_->state.seq, self, waiting] {
      caf::anon_send(me, resume_atom_v, seq, continuation{[self, waiting] { self->state.step_waiting = waiting; }});
    };
  }

  job_ptr self_;
};

// ---- the actor -----------------------------------------------------------------------------

job_actor::behavior_type job(job_ptr self, std::shared_ptr<worker_context> ctx,
                             std::shared_ptr<const stage> stage, heartbeat_actor hb, queue_message msg) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.stage = std::move(stage);
  st.work = st.stage->make_job(st.ctx);
  st.handle = std::make_unique<handle_impl>(self);
  st.heartbeat = std::move(hb);
  st.msg = std::move(msg);
  st.ctx->metrics->job_started(st.stage->name);
  self->attach_functor([metrics = st.ctx->metrics, stage = st.stage] { metrics->job_ended(stage->name); });
  self->send(self, resume_atom_v, uint64_t{0}, continuation{[self] { parse(self); }});
  return {
    [self](resume_atom, uint64_t seq, continuation& c) {
      auto& st = self->state;
      if (seq != st.seq)
        return; // the answer of a step abandoned (deadline, stop, lost)
      if (st.cancel_requested && st.phase == job_phase::working)
        return cancel(self);  // a step boundary: its result is dropped
      if (log::enabled(log::level::trace))
        log::write_with(log::level::trace, "job step answered", log_fields(st));
      c.fn();
    },
    [self](lost_atom, std::string& reason) { lost(self, std::move(reason)); },
    [self](stop_atom) { release(self); },
    [self](cancel_atom) { cancel_requested(self); },
    caf::after(step_timeout_of(st)) >> [self] { deadline_passed(self); },
  };
}

// ---- the lifecycle, from the message to the outcome ----------------------------------------

void parse(job_ptr self) {
  auto& st = self->state;
  std::string_view body = st.msg.body;
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back())))
    body.remove_suffix(1);
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.front())))
    body.remove_prefix(1);
  auto id = uuid::parse(body);
  if (!id || id->is_nil()) {
    auto shown = std::string{utf8_prefix(st.msg.body, 80)};
    log::write_with(log::level::warn, "message body is not an id; deleting it", log_fields(st),
                    {{"body", shown}});
    return ack(self, job_result::invalid, "body is not a UUID: \"" + shown + "\"");
  }
  st.id = *id;
  claim(self);
}

void claim(job_ptr self) {
  auto& st = self->state;
  st.phase = job_phase::claiming;
  request_step<std::optional<claimed_work>>(
    self, steps::claim,
    [&](auto cb) { st.work->claim(st.id, uuid::v7(), st.stage->max_attempts, std::move(cb)); },
    [self](result<std::optional<claimed_work>> r) {
      auto& st = self->state;
      if (!r)
        return finish(self, job_result::abandoned, "claim failed: " + r.error().describe(),
                      to_string(r.error().cls));
      bool granted = r->has_value();
      if (granted) {
        st.claim = **r;
        st.claimed = true;
        step_done(self, "ok", "attempt " + std::to_string(st.claim.attempt_count + 1));
      }
      if (st.phase == job_phase::releasing)
        return give_back(self, "shutdown");  // a stop came while the claim ran
      if (!granted)
        return not_claimed(self);
      if (st.stage->escalate_to && st.claim.size_class == "large") {
        // A crash moved it to the large class (or an escalation's hand-over did not finish):
        // give the claim back uncounted and hand it over; nothing here can undo that.
        st.phase = job_phase::outcome_stored;
        return request_step<void>(
          self, steps::release, [&](auto cb) { st.work->release(st.lease(), std::move(cb)); },
          [self](result<void> r) {
            if (!r)  // still held: it expires and counts as a crash, once more within the bound
              return finish(self, job_result::abandoned,
                            "releasing a large-class claim failed: " + r.error().describe(),
                            to_string(r.error().cls));
            step_done(self, "ok");
            hand_over(self, "in the large class (after a crash)", "none");
          });
      }
      st.phase = job_phase::working;
      if (st.msg.sent_at_ms > 0)
        st.ctx->metrics->claim_wait(static_cast<double>(unix_ms() - st.msg.sent_at_ms) / 1000.0);
      track(self);
    });
}

/// The claim did not succeed: delete the message only if the outcome is final or the id unknown.
void not_claimed(job_ptr self) {
  auto& st = self->state;
  request_step<ingestion_state>(
    self, steps::states, [&](auto cb) { st.work->state(st.id, std::move(cb)); },
    [self](result<ingestion_state> r) {
      if (!r)
        return finish(self, job_result::abandoned,
                      "not claimed, and its state is unknown: " + r.error().describe(), "transient");
      switch (*r) {
        case ingestion_state::completed:
          return ack(self, job_result::skipped, "already completed");
        case ingestion_state::failed:
          return ack(self, job_result::skipped, "already failed");
        case ingestion_state::skipped:
          return ack(self, job_result::skipped, "skipped (a known file)");
        case ingestion_state::cancelled:
          return ack(self, job_result::skipped, "cancelled");
        case ingestion_state::unknown:
          return ack(self, job_result::skipped, "no such ingestion");
        case ingestion_state::held:
          return finish(self, job_result::skipped, "held by another worker; message left to reappear");
        case ingestion_state::claimable:
          return finish(self, job_result::skipped, "claimable again; message left to reappear");
      }
    });
}

void track(job_ptr self) {
  auto& st = self->state;
  st.tracked = true;
  self->send(st.heartbeat, track_atom_v,
             tracked_claim{st.msg.receipt, st.lease(), caf::actor_cast<caf::actor>(self), st.started,
                           st.stage, st.claim.document_id, st.claim.tenant_id});
  st.work->run(*st.handle);
}

void untrack(job_ptr self) {
  auto& st = self->state;
  if (st.tracked) {
    st.tracked = false;
    self->send(st.heartbeat, untrack_atom_v, st.claim.id);
  }
}

/// Deletes the message (the outcome is final), then finishes. The audit trail is written first,
/// so a crash after the delete loses no event of the finished ingestion but the ack's own.
void ack(job_ptr self, job_result outcome, std::string detail, std::string error_class) {
  untrack(self);
  auto& st = self->state;
  if (st.events.empty())
    return delete_message(self, outcome, std::move(detail), std::move(error_class));
  auto events = std::move(st.events);
  st.events.clear();
  request_step<void>(
    self, steps::events, [&](auto cb) { st.ctx->ports.db->append_events(std::move(events), std::move(cb)); },
    [self, outcome, detail, error_class](result<void> r) {
      if (!r)
        log::write_with(log::level::warn, "audit events not stored", log_fields(self->state),
                        {{"error", r.error().describe()}});
      delete_message(self, outcome, detail, error_class);
    });
}

void delete_message(job_ptr self, job_result outcome, std::string detail, std::string error_class) {
  request_step<std::vector<batch_entry_result>>(
    self, steps::ack,
    [&](auto cb) { self->state.stage->queue->remove({self->state.msg.receipt}, std::move(cb)); },
    [self, outcome, detail = std::move(detail),
     error_class = std::move(error_class)](result<std::vector<batch_entry_result>> r) {
      if (!r || (!r->empty() && r->front().failed)) {
        auto why = !r ? r.error().describe() : r->front().error.describe();
        // The outcome is already final in the database: a redelivery finds it and deletes.
        log::write_with(log::level::warn, "message not deleted", log_fields(self->state), {{"error", why}});
        step_done(self, "transient", why);
      } else {
        step_done(self, "ok");
      }
      finish(self, outcome, detail, error_class);
    });
}

void flush_events(job_ptr self) {
  auto& st = self->state;
  if (st.events.empty())
    return;
  st.ctx->ports.db->append_events(std::move(st.events), [fields = log_fields(st)](result<void> r) {
    if (!r)
      log::write_with(log::level::warn, "audit events not stored", fields, {{"error", r.error().describe()}});
  });
  st.events.clear();
}

void finish(job_ptr self, job_result result, std::string detail, std::string_view error_class) {
  auto& st = self->state;
  if (st.phase == job_phase::finished)
    return;
  st.phase = job_phase::finished;
  ++st.seq;  // anything still in flight is stale now
  untrack(self);
  flush_events(self);
  auto elapsed = std::chrono::duration<double>(clock::now() - st.started).count();
  auto outcome = to_string(result);
  st.ctx->metrics->job_finished(st.stage->name, outcome, error_class);
  auto lvl = result == job_result::completed || result == job_result::skipped ? log::level::info
                                                                             : log::level::warn;
  log::write_with(lvl, "job finished", log_fields(st),
                  {{"status", std::string{outcome}},
                   {"error_class", error_class},
                   {"detail", detail},
                   {"duration_ms", static_cast<int64_t>(elapsed * 1000)}});
  if (st.ctx->observer)
    st.ctx->observer(job_outcome{st.msg.id, st.id, result, std::move(detail),
                                 st.claim.attempt_count + (st.claimed ? 1 : 0)});
  self->quit();
}

// ---- the failure path (DESIGN §5) ----------------------------------------------------------

void fail(job_ptr self, const error& err, std::string structured_data) {
  auto& st = self->state;
  if (st.phase == job_phase::releasing || st.phase == job_phase::finished)
    return;
  if (err.claim_lost())
    return finish(self, job_result::lost, err.describe(), "claim_lost");
  if (database_unavailable(err) || never_started(err)) {
    // The database went away under the job, or the node had no CPU worker for it in time: the
    // system's failure, not the document's. No attempt is counted and no back-off waited out;
    // the work is given back and starts again as soon as the database answers or a worker is
    // free (the poller admits work by what the CPU pool can finish). If the give-back cannot
    // reach the database either, the message reappears after its visibility timeout and the
    // expired claim counts as a crash.
    st.phase = job_phase::releasing;
    untrack(self);
    return give_back(self, (never_started(err) ? "node busy: " : "database unavailable: ")
                             + err.describe());
  }
  auto& s = *st.stage;
  auto attempt = static_cast<size_t>(std::max(st.claim.attempt_count, 0));
  auto delay = s.retry_backoff.empty() ? std::chrono::seconds{0}
                                       : s.retry_backoff[std::min(attempt, s.retry_backoff.size() - 1)];
  // A server that asked for a longer wait (Retry-After) gets it.
  if (err.retry_after_ms > 0)
    delay = std::max(delay, std::chrono::seconds{
                              (std::min(err.retry_after_ms, max_retry_after_ms) + 999) / 1000});
  failure_record rec{err, s.max_attempts, std::move(structured_data)};
  if (s.class_max_attempts > 0) {
    // Size classes (seed 004): attempts count per class; a timeout in the small class moves it
    // at once (it is larger than it looked), a failure after class_max_attempts of them.
    auto in_class = st.claim.attempt_count + 1 - st.claim.class_attempts_base;
    auto timed_out = err.code == "step.timeout" || err.code == "ocr.deadline";
    if (s.escalate_to) {
      rec.escalate = timed_out || (!err.permanent() && in_class >= s.class_max_attempts);
      rec.max_attempts = std::numeric_limits<int32_t>::max();
      if (rec.escalate)
        delay = std::chrono::seconds{0};
    } else {
      // The large class: a timeout (even the OCR's, which is permanent elsewhere) is one of
      // its class_max_attempts, as any transient failure.
      rec.max_attempts = st.claim.class_attempts_base + s.class_max_attempts;
      if (timed_out)
        rec.error.cls = error_class::transient;
    }
  }
  auto escalating = rec.escalate;
  untrack(self);
  st.phase = job_phase::storing_outcome;
  request_step<failure_outcome>(
    self, steps::record_failure,
    [&](auto cb) { st.work->record_failure(st.lease(), std::move(rec), delay, std::move(cb)); },
    [self, err, delay, escalating](result<failure_outcome> r) {
      auto& st = self->state;
      auto cls = std::string{to_string(err.cls)};
      if (!r) {
        if (r.error().claim_lost())
          return finish(self, job_result::lost, r.error().describe(), "claim_lost");
        // Nothing recorded: the message reappears after its visibility timeout and the lease
        // expires, so the next attempt starts over.
        return finish(self, job_result::abandoned,
                      err.describe() + "; recording it failed: " + r.error().describe(), cls);
      }
      st.phase = job_phase::outcome_stored;
      step_done(self, r->failed ? "failed" : "retrying", err.describe());
      auto detail = err.describe();
      st.claim.attempt_count = r->attempt_count - 1;
      if (escalating && !r->failed)
        return hand_over(self, detail, cls);
      if (!r->failed)
        return back_off(self, delay, detail, cls);
      st.work->failed_for_good(err, r->attempt_count);
      auto policy = st.stage->dead_letter;
      if (policy == dead_letter_policy::always
          || (policy == dead_letter_policy::exhausted && !err.permanent()))
        return finish(self, job_result::failed, detail, cls);  // the queue's redrive takes it
      ack(self, job_result::failed, detail, cls);
    });
}

/// A transient failure is recorded: the message reappears after the back-off.
void back_off(job_ptr self, std::chrono::seconds delay, std::string detail, std::string error_class) {
  auto& st = self->state;
  request_step<std::vector<batch_entry_result>>(
    self, steps::backoff,
    [&](auto cb) { st.stage->queue->change_visibility({{st.msg.receipt, delay}}, std::move(cb)); },
    [self, detail = std::move(detail),
     error_class = std::move(error_class)](result<std::vector<batch_entry_result>> v) {
      if (!v || (!v->empty() && v->front().failed))
        step_done(self, "transient", !v ? v.error().describe() : v->front().error.describe());
      else
        step_done(self, "ok");
      finish(self, job_result::retrying, detail, error_class);
    });
}

// ---- ways out from outside: the claim lost, the step's deadline, shutdown -------------------

/// The row is in the large class now: its id goes to the large class's queue, then this message
/// is acknowledged. Should the send fail, this message reappears after its visibility timeout and
/// the next delivery finds the row large and hands it over again.
void hand_over(job_ptr self, std::string detail, std::string error_class) {
  auto& st = self->state;
  request_step<std::vector<batch_entry_result>>(
    self, steps::escalate,
    [&](auto cb) { st.stage->escalate_to->send({outgoing_message{st.id.str(), std::chrono::seconds{0}}}, std::move(cb)); },
    [self, detail = std::move(detail),
     error_class = std::move(error_class)](result<std::vector<batch_entry_result>> r) {
      if (!r || r->empty() || r->front().failed) {
        auto why = !r ? r.error().describe() : r->empty() ? std::string{"no result"} : r->front().error.describe();
        step_done(self, "transient", why);
        return finish(self, job_result::retrying,
                      detail + "; moving it to the large class failed (" + why + "): its message reappears",
                      error_class);
      }
      step_done(self, "ok", "to " + self->state.stage->escalate_to->name());
      self->state.ctx->metrics->escalations++;
      ack(self, job_result::escalated, "moved to the large class: " + detail, error_class);
    });
}

/// The heartbeat could not keep the message or the claim: stop, write nothing more.
void lost(job_ptr self, std::string reason) {
  auto& st = self->state;
  switch (st.phase) {
    case job_phase::parsing:
    case job_phase::claiming:
    case job_phase::working:
      break;
    case job_phase::storing_outcome:
      // The final write is fenced by the claim token: its own answer says whether the claim was
      // really lost (a renewal that ran just after it committed reports "lost" for a row that is
      // merely no longer in progress).
    case job_phase::outcome_stored:
    case job_phase::releasing:
    case job_phase::finished:
      return;
  }
  st.tracked = false;  // the heartbeat dropped it already
  if (st.claimed)
    st.work->release(st.lease(), [](const result<void>&) {});
  finish(self, job_result::lost, std::move(reason), "claim_lost");
}

/// No message for step_timeout: the current step ran past its deadline and fails with it.
void deadline_passed(job_ptr self) {
  auto& st = self->state;
  if (!st.on_timeout || st.step_waiting)
    return;
  if (st.cancel_requested && st.phase == job_phase::working)
    return cancel(self);  // the step ended by its deadline: a boundary as good as its answer
  ++st.seq; // the step's completion, should it come, is stale now
  auto secs = step_timeout_of(st).count();
  auto handler = std::move(st.on_timeout);
  std::string what{st.step};
  what.append(" did not finish within ").append(std::to_string(secs)).append(" s");
  handler(error::make_transient("step.timeout", std::move(what)));
}

// ---- cancellation (issue 13) ---------------------------------------------------------------

/// The heartbeat saw a cancel request for this job's ingestion. Only the working phase stops:
/// once the outcome is being stored it wins, and before the claim there is nothing to stop.
void cancel_requested(job_ptr self) {
  auto& st = self->state;
  if (st.phase != job_phase::working)
    return;
  st.cancel_requested = true;
  log::write_with(log::level::info, "job cancelled; stopping at the next step", log_fields(st));
}

/// At a step boundary: records `cancelled` (fenced), then the audit trail and the ack.
void cancel(job_ptr self) {
  auto& st = self->state;
  step_done(self, "cancelled", "stopped at this step: the ingestion was cancelled");
  st.phase = job_phase::storing_outcome;
  untrack(self);
  request_step<void>(
    self, steps::cancel, [&](auto cb) { st.work->record_cancelled(st.lease(), std::move(cb)); },
    [self](result<void> r) {
      auto& st = self->state;
      if (!r) {
        if (r.error().claim_lost())
          return finish(self, job_result::lost, r.error().describe(), "claim_lost");
        // Not recorded (the database, or a stage that cannot cancel): give the work back; the
        // next claim sees the request again.
        st.phase = job_phase::releasing;
        return give_back(self, "cancel not recorded: " + r.error().describe());
      }
      st.phase = job_phase::outcome_stored;
      step_done(self, "ok", "cancelled by request");
      ack(self, job_result::cancelled, "cancelled by request", "cancelled");
    });
}

/// Shutdown past the grace period: give everything back so another worker can start at once.
void release(job_ptr self) {
  auto& st = self->state;
  // While the outcome (or the failure) is being stored, the fenced write decides: a give-back
  // now would race it and could undo a stored outcome's claim. Its answer comes within the step
  // deadline; after it only the short ack or back-off is left.
  if (st.phase == job_phase::storing_outcome || st.phase == job_phase::outcome_stored
      || st.phase == job_phase::releasing || st.phase == job_phase::finished)
    return;
  auto claim_running = st.phase == job_phase::claiming && st.step == steps::claim;
  st.phase = job_phase::releasing;
  untrack(self);
  // A claim granted in the database but never released would expire and count as a crash:
  // its answer gives back what it granted (claim()), or its deadline ends the job.
  if (!claim_running)
    give_back(self, "shutdown");
}

/// Releases the claim, if one was granted, then makes the message visible again.
void give_back(job_ptr self, std::string reason) {
  auto& st = self->state;
  auto give_back_message = [self, reason = std::move(reason)] {
    auto& st = self->state;
    st.stage->queue->change_visibility({{st.msg.receipt, std::chrono::seconds{0}}},
                                                 [](const result<std::vector<batch_entry_result>>&) {});
    finish(self, job_result::released, reason + ": claim and message given back");
  };
  if (!st.claimed) {
    ++st.seq;
    return give_back_message();
  }
  // The claim first, so that the message's next receiver can claim at once. Whatever step was
  // running becomes stale: its completion is ignored.
  request_step<void>(
    self, steps::release, [&](auto cb) { st.work->release(st.lease(), std::move(cb)); },
    [self, give_back_message](result<void> r) {
      step_done(self, r ? "ok" : to_string(r.error().cls), r ? std::string{} : r.error().describe());
      give_back_message();
    });
}

} // namespace

std::string_view to_string(job_result x) {
  switch (x) {
    case job_result::completed: return "completed";
    case job_result::failed: return "failed";
    case job_result::retrying: return "retrying";
    case job_result::skipped: return "skipped";
    case job_result::invalid: return "invalid";
    case job_result::lost: return "lost";
    case job_result::released: return "released";
    case job_result::abandoned: return "abandoned";
    case job_result::cancelled: return "cancelled";
    case job_result::escalated: return "escalated";
  }
  return "abandoned";
}

job_actor spawn_job(caf::actor_system& sys, std::shared_ptr<worker_context> ctx,
                    std::shared_ptr<const stage> stage, heartbeat_actor heartbeat, queue_message msg) {
  return sys.spawn(job, std::move(ctx), std::move(stage), std::move(heartbeat), std::move(msg));
}

job_actor spawn_job(caf::actor_system& sys, std::shared_ptr<worker_context> ctx,
                    heartbeat_actor heartbeat, queue_message msg) {
  std::shared_ptr<const stage> ingest = make_ingest_stage(*ctx);
  return spawn_job(sys, std::move(ctx), std::move(ingest), std::move(heartbeat), std::move(msg));
}

} // namespace ingestd
