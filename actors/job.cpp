// The job actor: one work item's lifecycle for its stage, from the queue message to the
// acknowledgement. The stage's steps (stages/<name>/) run in the middle, through the job_handle;
// everything around them is the same for every stage.
//
//   parse ──invalid──────────────────────────────────────────────────► ack ─► done (invalid)
//     │
//   claim ──held by another────────────────────────────────────────────────► done (skipped, left)
//     │   ──finished (maybe by this claim: a known file, poison) / unknown─► ack ─► done (skipped)
//     │   ──moved to another size class (maybe by this claim: a crash)─────► ack ─► done (moved)
//     │   ──error──────────────────────────────────────────────────────────► done (abandoned)
//   track (heartbeat)
//     │
//   the stage's steps ─► its outcome stored with the item's completion ─► untrack ─► ack
//     ─► done (completed)
//     │
//   the database gone (connection lost mid-job), no CPU worker in time, a provider's line full
//     ─► untrack ─► release ─► visibility 0 ─► done (released; no attempt counted)
//   any other error ─► fail: the stage's failure hook ─► record_failure
//        ──failed──────────────► untrack ─► ack* ─► done (failed)
//        ──moved to a class────► untrack ─► ack ─► done (moved; its message is in that queue)
//        ──in progress─────────► untrack ─► visibility = back-off ─► done (retrying)
//        └─error or timeout────► untrack ─► done (abandoned; message and lease expire)
//   claim_lost anywhere, or lost from the heartbeat ─► untrack (release) ─► done (lost)
//   cancel (the heartbeat saw `ingestd cancel`) while working ─► the current step's port call
//     may stop early (cancel_token) ─► at the next step boundary (the current step's answer, or
//     its deadline) ─► untrack ─► record_cancelled ─► ack ─► done (cancelled); the step's result
//     is dropped, so nothing half-written follows. An outcome refused for a cancel request
//     (work.cancelled) records the cancellation the same way
//   stop (shutdown) ─► untrack ─► release ─► visibility 0 ─► done (released)
//     (a stop during the claim waits for its answer and gives back what it granted: a claim
//      left to expire counts as a crash)
//
// (*) not deleted when the stage leaves it for the queue's dead-letter redrive. Every step is a
// port call with a deadline; a late answer of an abandoned step is ignored. A step starts while
// the job handles a message and ends with the next one, so "no message for step_timeout" is "the
// step ran past its deadline": every message sets the job's deadline in the node's table
// (actors/deadlines.hpp), whose sweep tells the job within a second of it passing. The entry
// goes when the job ends, so a finished job is freed at once.
//
// The audit trail (stages with an audit) goes to the database with the state change it leads to
// (the outcome, the failure, the give-back, the cancellation), in its transaction; the steps
// after it (acknowledgement, back-off) are logged and measured only. A change that did not reach
// the database leaves the trail to the next one (a cancellation's to the give-back), or to be
// written alone when the job ends; each row is written once.
//
// The phase (job_phase) runs parsing ─► claiming ─► working ─► storing_outcome ─►
// outcome_stored ─► finished; a stop before storing_outcome turns any of them into releasing.
// The file reads in that order: the state, how a step runs, the actor's messages, each step from
// parse to finish, then the failure path and the ways out that come from outside.
#include "actors/job.hpp"

#include <atomic>
#include <cctype>
#include <exception>
#include <limits>

#include <caf/abstract_actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/continuation.hpp"
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
  claiming,        ///< claiming
  working,         ///< claimed: the stage's steps
  storing_outcome, ///< the final write (the stage's outcome or the failure), fenced by the token
  outcome_stored,  ///< the outcome is in the database: only the ack or the back-off is left
  releasing,       ///< shutdown: the claim and the message are being given back
  finished,        ///< done: the actor quits, and anything still in flight is stale
};

// The lifecycle's own steps; a stage names its own.
namespace steps {
constexpr std::string_view parse = "parse";
constexpr std::string_view claim = "claim";
constexpr std::string_view record_failure = "record_failure";
constexpr std::string_view backoff = "backoff";
constexpr std::string_view ack = "ack";
constexpr std::string_view release = "release";
constexpr std::string_view cancel = "cancel";
constexpr std::string_view complete = "complete";
} // namespace steps

class handle_impl;

using job_impl = with_continuations<job_actor>;

/// A job's place among the node's jobs in flight (node_admission), taken at its spawn and given
/// up once: when it finishes, before it quits, so that a poller its end wakes sees the room it
/// left (its monitors hear of the end only after it quits); when an exception ends it, in its
/// exception handler, for the same reason; or when it exits otherwise.
class flight {
public:
  flight(std::shared_ptr<node_context> ctx, std::string_view stage)
      : ctx_(std::move(ctx)), stage_(stage) {
    ctx_->admission->job_started();
    ctx_->metrics->job_started(stage_);
  }
  void end() {
    if (ended_.exchange(true))
      return;
    ctx_->admission->job_ended();
    ctx_->metrics->job_ended(stage_);
  }

private:
  std::shared_ptr<node_context> ctx_;
  std::string stage_;
  std::atomic<bool> ended_{false};
};

struct job_state {
  static inline const char* name = "ingestd.job";

  std::shared_ptr<node_context> ctx;
  std::shared_ptr<const ingestd::stage> stage;
  std::shared_ptr<flight> in_flight;
  std::unique_ptr<stage_job> work;
  std::unique_ptr<handle_impl> handle;
  heartbeat_actor heartbeat;
  queue_message msg;

  job_phase phase = job_phase::parsing;
  /// The work item the message names.
  uuid id;
  claimed_work claim;
  /// Two facts beside the phase, as neither follows from it. `claimed`: a claim was granted; it
  /// stays true through releasing and finished, where it decides whether there is a claim to give
  /// back, and from then on the audit trail is kept. `tracked`: the heartbeat holds the claim;
  /// within storing_outcome it is true while completing and false while recording a failure
  /// (untracked first), and the heartbeat itself clears it when it reports the claim lost.
  bool claimed = false;
  bool tracked = false;
  /// The work was cancelled while the job worked: it stops at the next step boundary; the
  /// current step's port call may stop early (job_handle::cancel_token, also requested when the
  /// job ends: nobody waits for the answer then).
  bool cancel_requested = false;
  std::stop_source cancel_source;

  /// The current step: its sequence number (stale answers are ignored), name, start, and what to
  /// do if its deadline passes first.
  uint64_t seq = 0;
  std::string_view step = steps::parse;
  clock::time_point step_started;
  std::function<void(error)> on_timeout;
  /// When the current step fails unless a message comes first (arm_deadline).
  caf::actor_clock::time_point deadline;
  /// The step waits for a CPU worker or for a provider's limits: its deadline does not run (the
  /// CPU pool and the provider's line answer work that waits too long themselves).
  bool step_waiting = false;

  clock::time_point started = clock::now();
  /// The audit trail not yet written with a state change.
  std::vector<audit_event> audit;

  claim_ref ref() const { return claim.ref(); }
};

using job_ptr = job_impl::stateful_pointer<job_state>;

// The lifecycle, in the order this file defines it.
void parse(job_ptr self);
void claim(job_ptr self);
void claimed(job_ptr self, claim_answer answer);
void track(job_ptr self);
void untrack(job_ptr self);
void ack(job_ptr self, job_result outcome, std::string detail,
         std::string_view error_class = "none");
void finish(job_ptr self, job_result result, std::string detail,
            std::string_view error_class = "none");
void fail(job_ptr self, const error& err);
void back_off(job_ptr self, std::chrono::seconds delay, std::string detail,
              std::string error_class);
void lost(job_ptr self, std::string reason);
void release(job_ptr self);
void give_back(job_ptr self, const std::string& reason,
               std::chrono::seconds delay = std::chrono::seconds{0});
void deadline_passed(job_ptr self);
void cancel_requested(job_ptr self);
void cancel(job_ptr self);

/// The fields every log line about this job carries: the node, the stage, the current step, the
/// work item (under its stage's key), the document and tenant once claimed, the attempt and the
/// queue message.
std::vector<log::field> log_fields(const job_state& st) {
  auto known = [](const uuid& id) { return id.is_nil() ? std::string{} : id.str(); };
  std::vector<log::field> f;
  f.reserve(8);
  f.emplace_back("worker_id", st.ctx->settings.worker_id);
  f.emplace_back("stage", st.stage->label);
  f.emplace_back("step", st.step);
  if (st.stage->item_log_key != "document_id")
    f.emplace_back(st.stage->item_log_key, known(st.id));
  f.emplace_back("document_id", st.claimed ? known(st.claim.document_id)
                                : st.stage->item_log_key == "document_id" ? known(st.id)
                                                                          : std::string{});
  f.emplace_back("tenant_id", st.claimed ? known(st.claim.tenant_id) : std::string{});
  f.emplace_back("attempt", static_cast<int64_t>(st.claim.attempt_count + (st.claimed ? 1 : 0)));
  f.emplace_back("message_id", st.msg.id);
  return f;
}

/// The deadline of each step of the stage's jobs.
std::chrono::seconds step_timeout_of(const job_state& st) {
  return st.stage->step_timeout.count() > 0 ? st.stage->step_timeout
                                            : st.ctx->settings.step_timeout;
}

/// The job's deadline runs from now (its last message): step_timeout, in the node's table.
void arm_deadline(job_ptr self) {
  auto& st = self->state;
  st.deadline = self->clock().now() + step_timeout_of(st);
  st.ctx->deadlines->set(self, st.deadline);
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
  st.step_waiting = false;
  st.on_timeout = std::move(on_timeout);
  auto me = caf::actor_cast<caf::actor>(self);
  return [me, seq](std::function<void()> fn) { post(me, seq, std::move(fn)); };
}

/// Starts a port call as the job's current step (job_handle::request, for the lifecycle's own).
template <class T, class Start, class Next>
void request_step(job_ptr self, std::string_view step, Start start, Next next) {
  auto post = begin_request(self, step, [next](error e) mutable { next(result<T>{std::move(e)}); });
  start(callback<T>{[post, next](result<T> r) mutable {
    post([next, r = std::move(r)]() mutable { next(std::move(r)); });
  }});
}

/// The current step's row of the audit trail.
audit_event audit_row(const job_state& st, std::string_view outcome, std::string detail) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - st.step_started)
                .count();
  return audit_event{st.id,
                     std::string{st.step},
                     std::string{outcome},
                     std::move(detail),
                     ms,
                     st.ctx->settings.worker_id,
                     unix_ms()};
}

/// True while the audit trail is kept: claimed, and the state change not yet written.
bool auditing(const job_state& st) {
  return st.claimed && st.stage->audit && st.phase != job_phase::outcome_stored
         && st.phase != job_phase::finished;
}

/// Records the current step's duration and outcome (the audit trail while kept, metrics always).
void step_done(job_ptr self, std::string_view outcome, std::string detail = {}) {
  auto& st = self->state;
  auto elapsed = clock::now() - st.step_started;
  st.ctx->metrics->step_duration(st.stage->label, st.step,
                                 std::chrono::duration<double>(elapsed).count());
  if (log::enabled(log::level::debug))
    log::write_with(log::level::debug, "step finished", log_fields(st),
                    {{"status", outcome},
                     {"duration_ms",
                      static_cast<int64_t>(
                          std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count())},
                     {"detail", detail}});
  if (auditing(st))
    st.audit.push_back(audit_row(st, outcome, std::move(detail)));
}

/// The trail kept and `last` after it, in a vector of their size (a copy and a push_back would
/// double its capacity, at every job in flight).
std::vector<audit_event> trail_with(const std::vector<audit_event>& kept, audit_event last) {
  std::vector<audit_event> rows;
  rows.reserve(kept.size() + 1);
  rows.insert(rows.end(), kept.begin(), kept.end());
  rows.push_back(std::move(last));
  return rows;
}

/// The audit trail so far, for the state change that writes it, with the current step's row.
/// The trail stays with the job until the change's answer says it was written (audit_written):
/// a change that did not reach the database leaves it for the next write, or to be written alone.
std::vector<audit_event> audit_for(const job_state& st, std::string_view outcome,
                                   std::string detail) {
  if (!st.claimed || !st.stage->audit)
    return {};
  return trail_with(st.audit, audit_row(st, outcome, std::move(detail)));
}

/// The state change's answer: the claimed-work repository writes the trail with the change,
/// and also when its fence refuses the change (claim_lost); any other error wrote nothing.
void audit_written(job_state& st, const result<void>& answer) {
  if (answer || answer.error().claim_lost())
    st.audit.clear();
}

/// The step's port call failed: the audit trail records the error, then the failure path runs.
void step_failed(job_ptr self, const error& err) {
  step_done(self, to_string(err.cls), err.describe());
  fail(self, err);
}

/// Runs the stage's code (its run(), a step's continuation): an exception out of it while the
/// job works fails the step with it as a transient error, as one out of a CPU step does
/// (stage_job::guarded), and the attempt is recorded and retried like any other.
template <class F>
void run_stage_code(job_ptr self, F&& f) {
  try {
    f();
  } catch (...) {
    auto& st = self->state;
    if (st.phase != job_phase::working)
      throw;  // the lifecycle's own code: exception_escaped
    ++st.seq; // whatever the step had started is stale
    step_failed(self, error::make_transient(std::string{errc::step_exception},
                                            exception_text(std::current_exception())));
  }
}

/// An exception out of the lifecycle's own code, or out of recording a step's exception: the job
/// ends as a crash does (CAF ends the actor after its exception handler). Its claim is left to
/// expire (the next claim counts the crash), and its place in the node is given back here,
/// before the monitors hear of its end, so that the poller its end wakes sees the room.
caf::error exception_escaped(job_ptr self, std::exception_ptr& eptr) {
  auto& st = self->state;
  auto what = exception_text(eptr);
  log::write_with(log::level::error, "job ended by an exception; its claim is left to expire",
                  log_fields(st), {{"error", what}});
  st.phase = job_phase::finished;
  st.in_flight->end();
  return caf::make_error(caf::sec::runtime_error, std::move(what));
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
  void fail(const error& err) override { ingestd::fail(self_, err); }
  void storing_outcome() override { self_->state.phase = job_phase::storing_outcome; }
  work_outcome outcome(std::vector<next_work> next) override {
    auto& st = self_->state;
    work_outcome o{st.ref(), {}, std::move(next)};
    if (st.claimed && st.stage->audit) {
      // A copy: should the write fail, the failure carries the trail instead.
      o.audit = trail_with(st.audit, audit_row(st, "ok", {}));
    }
    return o;
  }
  void completed() override {
    auto& st = self_->state;
    st.audit.clear(); // written with the outcome
    st.phase = job_phase::outcome_stored;
    ingestd::step_done(self_, "ok");
    ack(self_, job_result::completed, "");
  }
  void complete(std::vector<next_work> next) override {
    auto self = self_;
    storing_outcome();
    request_step<std::vector<result<void>>>(
        self, steps::complete,
        [&](auto cb) {
          std::vector<work_outcome> batch; // not {outcome}: a list's elements are copied
          batch.push_back(outcome(std::move(next)));
          self->state.ctx->work->complete(std::move(batch), std::move(cb));
        },
        [self](result<std::vector<result<void>>> r) {
          if (r && r->empty())
            r = error::make_transient(std::string{errc::db_no_result}, "complete answered nothing");
          if (r && !r->front())
            r = r->front().error();
          if (!r) {
            // The claimed-work repository writes the trail even when its fence refuses the
            // completion: the job must not write it again.
            if (r.error().claim_lost())
              self->state.audit.clear();
            return ingestd::fail(self, r.error());
          }
          self->state.handle->completed();
        });
  }
  std::function<void()> wait_for_cpu() override {
    self_->state.step_waiting = true;
    return waiting_notice(false);
  }
  call_context port_call() override {
    std::vector<context_field> fields;
    for (auto& f : log_fields(self_->state))
      fields.push_back({std::string{f.key}, f.value, f.number});
    return {waiting_notice(true), waiting_notice(false),
            std::make_shared<const std::vector<context_field>>(std::move(fields))};
  }
  std::stop_token cancel_token() const override { return self_->state.cancel_source.get_token(); }
  const node_context& node() const override { return *self_->state.ctx; }
  const claimed_work& claim() const override { return self_->state.claim; }

protected:
  std::function<void(std::function<void()>)> begin(std::string_view step,
                                                   std::function<void(error)> on_timeout) override {
    return begin_request(self_, step, std::move(on_timeout));
  }

private:
  /// A notice (from any thread) that the current step waits, or goes on. It is a message to the
  /// job, which restarts its deadline: the step's deadline runs from then on.
  std::function<void()> waiting_notice(bool waiting) const {
    auto self = self_;
    return [me = caf::actor_cast<caf::actor>(self_), seq = self_->state.seq, self, waiting] {
      post(me, seq, [self, waiting] { self->state.step_waiting = waiting; });
    };
  }

  job_ptr self_;
};

// ---- the actor -----------------------------------------------------------------------------

job_impl::behavior_type job(job_ptr self, std::shared_ptr<node_context> ctx,
                            std::shared_ptr<const stage> stage, heartbeat_actor hb,
                            queue_message msg, std::shared_ptr<flight> in_flight) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.stage = std::move(stage);
  st.in_flight = std::move(in_flight);
  st.handle = std::make_unique<handle_impl>(self);
  st.heartbeat = std::move(hb);
  st.msg = std::move(msg);
  self->set_exception_handler(
      [self](std::exception_ptr& eptr) { return exception_escaped(self, eptr); });
  post(caf::actor_cast<caf::actor>(self), 0, [self] { parse(self); });
  // Every message the job handles restarts its deadline.
  return {
      [self](resume_atom, uint64_t seq, continuation& c) {
        arm_deadline(self);
        auto& st = self->state;
        if (seq != st.seq)
          return; // the answer of a step abandoned (deadline, stop, lost)
        if (st.cancel_requested && st.phase == job_phase::working)
          return cancel(self); // a step boundary: its result is dropped
        run_stage_code(self, c.fn);
      },
      [self](lost_atom, std::string& reason) {
        arm_deadline(self);
        lost(self, std::move(reason));
      },
      [self](stop_atom) {
        arm_deadline(self);
        release(self);
      },
      [self](cancel_atom) {
        arm_deadline(self);
        cancel_requested(self);
      },
      [self](timeout_atom) {
        if (self->clock().now() < self->state.deadline)
          return; // a message came after the sweep took the deadline
        arm_deadline(self);
        deadline_passed(self);
      },
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
  auto& s = *st.stage;
  st.phase = job_phase::claiming;
  claim_request req{st.id,          uuid::v7(),          s.name,       s.size_class,
                    s.max_attempts, s.skips_known_files, s.crash_move, s.audit};
  request_step<std::vector<claim_answer>>(
      self, steps::claim,
      [&](auto cb) {
        st.ctx->work->claim({std::move(req)}, st.ctx->settings.worker_id, st.ctx->settings.lease,
                            std::move(cb));
      },
      [self](result<std::vector<claim_answer>> r) {
        if (r && r->empty())
          r = error::make_transient(std::string{errc::db_no_result}, "the claim answered nothing");
        if (!r)
          return finish(self, job_result::abandoned, "claim failed: " + r.error().describe(),
                        to_string(r.error().cls));
        claimed(self, std::move(r->front()));
      });
}

/// The claim's answer: the job runs, or its message is left or deleted.
void claimed(job_ptr self, claim_answer answer) {
  auto& st = self->state;
  if (answer.outcome == claim_outcome::granted) {
    st.claim = std::move(answer.work);
    st.claimed = true;
    step_done(self, "ok", "attempt " + std::to_string(st.claim.attempt_count + 1));
  }
  if (st.phase == job_phase::releasing)
    return give_back(self, "shutdown"); // a stop came while the claim ran
  switch (answer.outcome) {
  case claim_outcome::granted:
    break;
  case claim_outcome::held:
    return finish(self, job_result::skipped, "held by another worker; message left to reappear");
  case claim_outcome::finished:
    if (answer.detail.rfind("known_file", 0) == 0)
      ++st.ctx->metrics->known_file_skips;
    return ack(self, job_result::skipped, "finished: " + answer.detail);
  case claim_outcome::unknown:
    return ack(self, job_result::skipped, "no such work item for stage " + st.stage->name);
  case claim_outcome::moved:
    return ack(self, job_result::moved, "in another size class: " + answer.detail);
  }
  st.phase = job_phase::working;
  if (st.msg.sent_at_ms > 0)
    st.ctx->metrics->claim_wait(static_cast<double>(unix_ms() - st.msg.sent_at_ms) / 1000.0);
  track(self);
}

void track(job_ptr self) {
  auto& st = self->state;
  st.tracked = true;
  self->send(st.heartbeat, track_atom_v,
             tracked_claim{st.msg.receipt, st.ref(), caf::actor_cast<caf::actor>(self), st.started,
                           st.stage, st.claim.document_id, st.claim.tenant_id});
  run_stage_code(self, [&st] {
    st.work = st.stage->make_job();
    st.work->run(*st.handle);
  });
}

void untrack(job_ptr self) {
  auto& st = self->state;
  if (st.tracked) {
    st.tracked = false;
    self->send(st.heartbeat, untrack_atom_v, st.claim.item);
  }
}

/// Deletes the message (the outcome is final), then finishes.
void ack(job_ptr self, job_result outcome, std::string detail, std::string_view error_class) {
  untrack(self);
  request_step<std::vector<batch_entry_result>>(
      self, steps::ack,
      [&](auto cb) { self->state.stage->queue->remove({self->state.msg.receipt}, std::move(cb)); },
      [self, outcome, detail = std::move(detail),
       error_class = std::string{error_class}](result<std::vector<batch_entry_result>> r) {
        if (!r || (!r->empty() && r->front().failed)) {
          auto why = !r ? r.error().describe() : r->front().error.describe();
          // The outcome is already final in the database: a redelivery finds it and deletes.
          log::write_with(log::level::warn, "message not deleted", log_fields(self->state),
                          {{"error", why}});
          step_done(self, "transient", why);
        } else {
          step_done(self, "ok");
        }
        finish(self, outcome, detail, error_class);
      });
}

/// The audit trail that no state change carried (the claim lost, the database gone): written
/// alone, if the database takes it.
void write_leftover_audit(job_state& st) {
  if (st.audit.empty())
    return;
  st.ctx->work->append_audit(std::move(st.audit), [fields = log_fields(st)](result<void> r) {
    if (!r)
      log::write_with(log::level::warn, "audit events not stored", fields,
                      {{"error", r.error().describe()}});
  });
  st.audit.clear();
}

void finish(job_ptr self, job_result result, std::string detail, std::string_view error_class) {
  auto& st = self->state;
  if (st.phase == job_phase::finished)
    return;
  st.phase = job_phase::finished;
  ++st.seq; // anything still in flight is stale now
  switch (result) {
  case job_result::completed:
  case job_result::failed:
  case job_result::retrying:
  case job_result::skipped:
  case job_result::cancelled:
  case job_result::moved:
    st.ctx->admission->database_answered(); // the outcome (or the claim's answer) was written
    break;
  default:
    break;
  }
  st.cancel_source.request_stop(); // a port call still running or waiting for the job may stop
  untrack(self);
  write_leftover_audit(st);
  auto elapsed = std::chrono::duration<double>(clock::now() - st.started).count();
  auto outcome = to_string(result);
  st.ctx->metrics->job_finished(st.stage->label, outcome, error_class,
                                st.claimed ? st.claim.tenant_id.str() : std::string{});
  auto lvl = result == job_result::completed || result == job_result::skipped ? log::level::info
                                                                              : log::level::warn;
  log::write_with(lvl, "job finished", log_fields(st),
                  {{"status", std::string{outcome}},
                   {"error_class", error_class},
                   {"detail", detail},
                   {"duration_ms", static_cast<int64_t>(elapsed * 1000)}});
  if (st.ctx->observer)
    st.ctx->observer(job_outcome{st.msg.id, st.id, st.stage->label, result, std::move(detail),
                                 st.claim.attempt_count + (st.claimed ? 1 : 0)});
  st.in_flight->end();
  self->quit();
}

// ---- the failure path ----------------------------------------------------------------------

/// Errors of the node rather than of the work: the work is given back, no attempt counted.
bool node_failure(const error& err) {
  return database_unavailable(err) || err.code == errc::cpu_busy || err.code == errc::ocr_busy
         || err.code == errc::provider_busy;
}

void fail(job_ptr self, const error& err) {
  auto& st = self->state;
  if (st.phase == job_phase::releasing || st.phase == job_phase::finished)
    return;
  if (err.claim_lost())
    return finish(self, job_result::lost, err.describe(), "claim_lost");
  if (err.code == errc::work_cancelled)
    return cancel(self); // the outcome was refused for a cancel request the job had not seen
  if (err.code == errc::budget_held) {
    // The tenant's budget is spent: the work waits, visible again when the budget is asked again.
    st.phase = job_phase::releasing;
    untrack(self);
    return give_back(self, err.describe(),
                     std::chrono::seconds{(std::max<int64_t>(err.retry_after_ms, 0) + 999) / 1000});
  }
  if (node_failure(err)) {
    // The database went away under the job, the node had no CPU worker for it in time, or a
    // provider's line was full: the system's failure, not the document's. No attempt is counted
    // and no back-off waited out; the work is given back and starts again as soon as there is
    // room. If the give-back cannot reach the database either, the message reappears after its
    // visibility timeout and the expired claim counts as a crash.
    st.phase = job_phase::releasing;
    untrack(self);
    if (database_unavailable(err))
      st.ctx->admission->database_failed();
    return give_back(self, (database_unavailable(err) ? "database unavailable: " : "node busy: ")
                               + err.describe());
  }
  auto& s = *st.stage;
  auto attempt = static_cast<size_t>(std::max(st.claim.attempt_count, 0));
  failure_plan plan{st.claim, failure_record{err, s.max_attempts, {}}, std::chrono::seconds{0}};
  // A decoder helper that died on the document is the document's crash: poison at the last attempt.
  plan.record.crash = decoder_crash(err);
  if (!s.retry_backoff.empty())
    plan.delay = s.retry_backoff[std::min(attempt, s.retry_backoff.size() - 1)];
  // A server that asked for a longer wait (Retry-After) gets it.
  if (err.retry_after_ms > 0)
    plan.delay = std::max(
        plan.delay,
        std::chrono::seconds{(std::min(err.retry_after_ms, max_retry_after_ms) + 999) / 1000});
  if (s.on_failure)
    s.on_failure(plan);
  auto moving = plan.record.move.has_value();
  auto final = !moving
               && (plan.record.error.permanent()
                   || st.claim.attempt_count + 1 >= plan.record.max_attempts);
  untrack(self);
  st.phase = job_phase::storing_outcome;
  auto delay = plan.delay;
  begin_step(st, steps::record_failure);
  auto audit = audit_for(st, moving ? "moved" : final ? "failed" : "retrying", err.describe());
  request_step<failure_outcome>(
      self, steps::record_failure,
      [&](auto cb) {
        st.ctx->work->record_failure(st.ref(), std::move(plan.record), delay, std::move(audit),
                                     std::move(cb));
      },
      [self, err, delay, moving](result<failure_outcome> r) {
        auto& st = self->state;
        auto cls = std::string{to_string(err.cls)};
        audit_written(st, r ? result<void>{} : result<void>{r.error()});
        if (!r) {
          if (r.error().claim_lost())
            return finish(self, job_result::lost, r.error().describe(), "claim_lost");
          // Nothing recorded: the message reappears after its visibility timeout and the lease
          // expires, so the next attempt starts over.
          return finish(self, job_result::abandoned,
                        err.describe() + "; recording it failed: " + r.error().describe(), cls);
        }
        st.phase = job_phase::outcome_stored;
        if (r->failed && decoder_crash(err))
          cls = errc::poison;
        step_done(self, r->failed ? "failed" : moving ? "moved" : "retrying", err.describe());
        auto detail = err.describe();
        st.claim.attempt_count = r->attempt_count - 1;
        if (moving && !r->failed) {
          st.ctx->metrics->escalations++;
          return ack(self, job_result::moved, "moved to another size class: " + detail, cls);
        }
        if (!r->failed)
          return back_off(self, delay, detail, cls);
        auto policy = st.stage->dead_letter;
        if (policy == dead_letter_policy::always
            || (policy == dead_letter_policy::exhausted && !err.permanent()))
          return finish(self, job_result::failed, detail, cls); // the queue's redrive takes it
        ack(self, job_result::failed, detail, cls);
      });
}

/// A transient failure is recorded: the message reappears after the back-off.
void back_off(job_ptr self, std::chrono::seconds delay, std::string detail,
              std::string error_class) {
  auto& st = self->state;
  request_step<std::vector<batch_entry_result>>(
      self, steps::backoff,
      [&](auto cb) {
        st.stage->queue->change_visibility({{st.msg.receipt, delay}}, std::move(cb));
      },
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
    // really lost (a renewal that ran just after it committed reports "lost" for an item that
    // is merely no longer in progress).
  case job_phase::outcome_stored:
  case job_phase::releasing:
  case job_phase::finished:
    return;
  }
  st.tracked = false; // the heartbeat dropped it already
  if (st.claimed)
    st.ctx->work->release(st.ref(), std::chrono::seconds{0}, audit_for(st, "claim_lost", reason),
                          [](const result<void>&) {});
  st.audit.clear(); // given to the release, which the job does not wait for
  finish(self, job_result::lost, std::move(reason), "claim_lost");
}

/// No message for step_timeout (the deadline sweep said so): the current step ran past its
/// deadline and fails with it.
void deadline_passed(job_ptr self) {
  auto& st = self->state;
  if (!st.on_timeout || st.step_waiting)
    return;
  if (st.cancel_requested && st.phase == job_phase::working)
    return cancel(self); // the step ended by its deadline: a boundary as good as its answer
  ++st.seq;              // the step's answer, should it come, is stale now
  auto secs = step_timeout_of(st).count();
  auto handler = std::move(st.on_timeout);
  std::string what{st.step};
  what.append(" did not finish within ").append(std::to_string(secs)).append(" s");
  handler(error::make_transient(std::string{errc::step_timeout}, std::move(what)));
}

// ---- cancellation --------------------------------------------------------------------------

/// The heartbeat saw a cancel request for this job's work item. Only the working phase stops:
/// once the outcome is being stored it wins, and before the claim there is nothing to stop.
void cancel_requested(job_ptr self) {
  auto& st = self->state;
  if (st.phase != job_phase::working)
    return;
  st.cancel_requested = true;
  log::write_with(log::level::info, "job cancelled; stopping at the next step", log_fields(st));
  // Last: a port that stops at once answers through a message, after this handler.
  st.cancel_source.request_stop();
}

/// At a step boundary: records `cancelled` (fenced) with the audit trail, then the ack.
void cancel(job_ptr self) {
  auto& st = self->state;
  step_done(self, "cancelled", "stopped at this step: the work was cancelled");
  st.phase = job_phase::storing_outcome;
  untrack(self);
  begin_step(st, steps::cancel);
  auto audit = audit_for(st, "ok", "cancelled by request");
  request_step<void>(
      self, steps::cancel,
      [&](auto cb) { st.ctx->work->record_cancelled(st.ref(), std::move(audit), std::move(cb)); },
      [self](result<void> r) {
        auto& st = self->state;
        audit_written(st, r);
        if (!r) {
          if (r.error().claim_lost())
            return finish(self, job_result::lost, r.error().describe(), "claim_lost");
          // Not recorded (the database): give the work back; the next claim sees the request again.
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
  // A claim granted in the database but never released would expire and count as a crash: its
  // answer gives back what it granted (claimed()), or its deadline ends the job.
  if (!claim_running)
    give_back(self, "shutdown");
}

/// Releases the claim, if one was granted, then makes the message visible again (after `delay`).
void give_back(job_ptr self, const std::string& reason, std::chrono::seconds delay) {
  auto& st = self->state;
  auto give_back_message = [self, reason, delay] {
    auto& st = self->state;
    st.stage->queue->change_visibility({{st.msg.receipt, delay}},
                                       [](const result<std::vector<batch_entry_result>>&) {});
    finish(self, job_result::released, reason + ": claim and message given back");
  };
  if (!st.claimed) {
    ++st.seq;
    return give_back_message();
  }
  // The claim first, so that the message's next receiver can claim at once. Whatever step was
  // running becomes stale: its answer is ignored.
  begin_step(st, steps::release);
  auto audit = audit_for(st, "ok", reason);
  request_step<void>(
      self, steps::release,
      [&](auto cb) { st.ctx->work->release(st.ref(), delay, std::move(audit), std::move(cb)); },
      [self, give_back_message](result<void> r) {
        step_done(self, r ? "ok" : to_string(r.error().cls),
                  r ? std::string{} : r.error().describe());
        // Written with the give-back, its own row included; a give-back that did not reach the
        // database leaves the trail and this row to be written alone.
        audit_written(self->state, r);
        give_back_message();
      });
}

} // namespace

job_actor spawn_job(caf::actor_system& sys, std::shared_ptr<node_context> node,
                    std::shared_ptr<const stage> stage, heartbeat_actor heartbeat,
                    queue_message msg) {
  // Counted in flight from its spawn, not from its first message: a poller that receives again
  // right after spawning sees the node's room without it.
  auto in_flight = std::make_shared<flight>(node, stage->label);
  auto self = sys.spawn(job, node, stage, std::move(heartbeat), std::move(msg), in_flight);
  caf::actor_cast<caf::abstract_actor*>(self)->attach_functor(
      [in_flight = std::move(in_flight), deadlines = node->deadlines, id = self.id()] {
        in_flight->end();
        deadlines->remove(id);
      });
  return self;
}

} // namespace ingestd
