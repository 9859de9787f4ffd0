// The job actor: one per queue message, owning one work item's lifecycle for its stage (the
// claim, the heartbeat, deadlines, failure and back-off, acknowledgement, give-back at shutdown,
// cancellation); the stage's own steps run through a job_handle (actors/stage.hpp).
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

#include <caf/fwd.hpp>

#include "actors/node_context.hpp"
#include "actors/stage.hpp"
#include "messages/call_context.hpp"
#include "messages/error_codes.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

/// What a stage's steps can do inside their job actor. Valid while the job runs; every
/// continuation it hands out runs inside the actor, and only while its step is current.
class job_handle {
public:
  virtual ~job_handle() = default;

  /// Starts a port call as the job's current step (its name is the audit trail's, the step
  /// metric's and the deadline message's) and returns at once: `start` gets the callback to hand
  /// to the port; `next` runs later inside the actor with the result, or with a "step.timeout"
  /// error if the step's deadline passes first.
  template <class T, class Start, class Next>
  void request(std::string_view step, Start start, Next next) {
    auto post = begin(step, [next](error e) mutable { next(result<T>{std::move(e)}); });
    start(callback<T>{[post, next](result<T> r) mutable {
      post([next, r = std::move(r)]() mutable { next(std::move(r)); });
    }});
  }

  /// Runs `work` (a callable returning result<T>: a parse, a hash, the local rules) on the
  /// node's CPU pool as the current step, so that CPU work never holds a scheduler thread. Its
  /// deadline starts when a worker takes it (it waits ahead of new documents' OCR, as the pages
  /// of a started document do); no worker within the CPU deadline is "cpu.busy", which gives
  /// the work back. Without a pool (node().cpu null: tests on the deterministic scheduler) the
  /// work runs inline.
  template <class T, class Work, class Next>
  void on_cpu(std::string_view step, Work work, Next next) {
    request<T>(
        step,
        [&](callback<T> cb) {
          auto& node = this->node();
          if (!node.cpu)
            return cb(guarded<T>(work));
          cpu_job job;
          job.continues_started_work = true;
          job.run = [started = wait_for_cpu(), work = std::move(work), cb]() mutable {
            started();
            cb(guarded<T>(work));
          };
          job.expired = [cb, what = std::string{step}]() mutable {
            cb(error::make_transient(std::string{errc::cpu_busy}, "no CPU worker was free for "
                                                                      + what
                                                                      + " within its deadline"));
          };
          job.deadline = std::chrono::steady_clock::now() + node.settings.cpu_deadline;
          node.cpu->submit(std::move(job));
        },
        std::move(next));
  }

  /// A step without a port call (e.g. the quality gate), recorded like the others.
  virtual void begin_local(std::string_view step) = 0;
  /// Records the current step's duration and outcome (the audit trail once claimed, metrics
  /// always).
  virtual void step_done(std::string_view outcome, std::string detail = {}) = 0;
  /// The step failed: the audit trail records the error, then fail().
  virtual void step_failed(const error& err) = 0;
  /// The failure path: recorded as an attempt with back-off, or given back when the database
  /// or the node (no CPU worker in time, a provider's full line) failed rather than the work.
  virtual void fail(const error& err) = 0;
  /// The next request stores the outcome: a shutdown no longer gives the work back.
  virtual void storing_outcome() = 0;
  /// The generic part of the outcome, for the stage's final write to finish the item in its
  /// transaction: the claim, the audit trail (the current step's row, "ok", included), and
  /// `next`, the next stages' work.
  virtual work_outcome outcome(std::vector<next_work> next = {}) = 0;
  /// The outcome is stored: acknowledge the message and finish as completed.
  virtual void completed() = 0;
  /// For a stage that stores nothing of its own at the end: finishes the item (step "complete")
  /// with `next`, then completed().
  virtual void complete(std::vector<next_work> next = {}) = 0;
  /// The current step waits for a CPU worker: its deadline does not run until `started()` is
  /// called (from any thread) when one takes it.
  virtual std::function<void()> wait_for_cpu() = 0;
  /// The call context of the current step's port call: while the call waits for a provider's
  /// limits the step's deadline does not run, and starts again when it goes on (the port calls
  /// the hooks from any thread); the adapter's log lines about the call carry the job's fields.
  virtual call_context port_call() = 0;

  /// Requested when the work is cancelled while it runs (the heartbeat saw `ingestd cancel`), and
  /// when the job ends (whatever it waited for is abandoned): a port call given it may stop early
  /// (the job stops at the step's answer and drops it).
  virtual std::stop_token cancel_token() const = 0;

  virtual const node_context& node() const = 0;
  virtual const claimed_work& claim() const = 0;
  claim_ref ref() const { return claim().ref(); }

protected:
  /// work(), or its exception as a transient error (a CPU worker must not die of it).
  template <class T, class Work>
  static result<T> guarded(Work& work) {
    try {
      return work();
    } catch (const std::exception& e) {
      return error::make_transient(std::string{errc::step_exception}, e.what());
    }
  }

  /// Starts the step; the returned function posts a continuation to the job for this step.
  virtual std::function<void(std::function<void()>)> begin(std::string_view step,
                                                           std::function<void(error)> on_timeout)
      = 0;
};

/// Spawns the job of `stage` for `msg`; it tracks its claim with `heartbeat` and quits when done.
job_actor spawn_job(caf::actor_system& sys, std::shared_ptr<node_context> node,
                    std::shared_ptr<const stage> stage, heartbeat_actor heartbeat,
                    queue_message msg);

} // namespace ingestd
