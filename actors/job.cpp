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
//   any other error ─► fail: what the stage kept for its outcome (save_progress) ─► the stage's
//     failure hook ─► record_failure
//        ──failed──────────────► untrack ─► ack* ─► done (failed)
//        ──moved to a class────► untrack ─► ack ─► done (moved; its message is in that queue)
//        ──in progress─────────► untrack ─► visibility = back-off ─► done (retrying)
//        └─error or timeout────► untrack ─► done (abandoned; message and lease expire)
//   claim_lost anywhere, or lost from the heartbeat ─► untrack (release) ─► done (lost)
//   cancel (the heartbeat saw `ingestd cancel`) while working ─► the current step's port call
//     may stop early (cancel_token) ─► at the next step boundary (the current step's answer, or
//     its deadline) ─► save_progress ─► untrack ─► record_cancelled ─► ack ─► done (cancelled);
//     the step's result is dropped, so nothing half-written follows. An outcome refused for a
//     cancel request (work.cancelled) records the cancellation the same way
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
// The state and the lifecycle's declarations are in actors/job_state.hpp. This file reads in the
// lifecycle's order: how a step runs, the actor's messages, each step from parse to finish; the
// failure path and the ways out that come from outside are in actors/job_failure.cpp.
#include "actors/job.hpp"

#include <cctype>
#include <exception>

#include <caf/abstract_actor.hpp>
#include <caf/actor_system.hpp>

#include "actors/job_state.hpp"
#include "messages/text.hpp"

namespace ingestd {

namespace job_detail {

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
void step_done(job_ptr self, std::string_view outcome, std::string detail) {
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
    job_detail::step_done(self_, outcome, std::move(detail));
  }
  void step_failed(const error& err) override { job_detail::step_failed(self_, err); }
  void fail(const error& err) override { job_detail::fail(self_, err); }
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
    job_detail::step_done(self_, "ok");
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
            return job_detail::fail(self, r.error());
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

} // namespace job_detail

job_actor spawn_job(caf::actor_system& sys, std::shared_ptr<node_context> node,
                    std::shared_ptr<const stage> stage, heartbeat_actor heartbeat,
                    queue_message msg) {
  using job_detail::flight;
  // Counted in flight from its spawn, not from its first message: a poller that receives again
  // right after spawning sees the node's room without it.
  auto in_flight = std::make_shared<flight>(node, stage->label);
  auto self
      = sys.spawn(job_detail::job, node, stage, std::move(heartbeat), std::move(msg), in_flight);
  caf::actor_cast<caf::abstract_actor*>(self)->attach_functor(
      [in_flight = std::move(in_flight), deadlines = node->deadlines, id = self.id()] {
        in_flight->end();
        deadlines->remove(id);
      });
  return self;
}

} // namespace ingestd
