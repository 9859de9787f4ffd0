// The job's failure path, and the ways out that come from outside: the claim lost, the step's
// deadline, cancellation and shutdown (the lifecycle and its diagram: actors/job.cpp).
#include <algorithm>

#include "actors/job_state.hpp"

namespace ingestd::job_detail {

// ---- the failure path ----------------------------------------------------------------------

namespace {

/// What the stage kept for its outcome is written (stage_job::save_progress), then `then` runs.
void save_progress(job_ptr self, std::function<void()> then) {
  auto& st = self->state;
  if (!st.work)
    return then();
  st.work->save_progress(*st.handle, std::move(then));
}

/// Errors of the node rather than of the work: the work is given back, no attempt counted.
bool node_failure(const error& err) {
  return database_unavailable(err) || err.code == errc::cpu_busy || err.code == errc::ocr_busy
         || err.code == errc::provider_busy;
}

} // namespace

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
  save_progress(self, [self, err] { record_attempt(self, err); });
}

/// The failed attempt recorded, with the stage's failure hook and the back-off: retried, moved to
/// another size class, or failed for good.
void record_attempt(job_ptr self, const error& err) {
  auto& st = self->state;
  if (st.phase == job_phase::releasing || st.phase == job_phase::finished)
    return;
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

/// At a step boundary: what the stage kept is written (save_progress), then `cancelled` is
/// recorded (fenced) with the audit trail, then the ack.
void cancel(job_ptr self) {
  auto& st = self->state;
  step_done(self, "cancelled", "stopped at this step: the work was cancelled");
  st.phase = job_phase::storing_outcome;
  save_progress(self, [self] { record_cancel(self); });
}

void record_cancel(job_ptr self) {
  auto& st = self->state;
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

} // namespace ingestd::job_detail
