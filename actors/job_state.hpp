// The job actor's state and its lifecycle's steps, shared by the two files that define them:
// actors/job.cpp (how a step runs, the actor, the lifecycle from the message to the outcome) and
// actors/job_failure.cpp (the failure path, and the ways out that come from outside: the claim
// lost, the step's deadline, cancellation, shutdown). Private to actors/.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/continuation.hpp"
#include "actors/job.hpp"
#include "adapters/support/log.hpp"

namespace ingestd::job_detail {

using clock = std::chrono::steady_clock;

inline int64_t unix_ms() {
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
  std::unique_ptr<job_handle> handle;
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

// The lifecycle: actors/job.cpp from parse to finish, actors/job_failure.cpp from fail on.
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
void record_attempt(job_ptr self, const error& err);
void record_cancel(job_ptr self);
void back_off(job_ptr self, std::chrono::seconds delay, std::string detail,
              std::string error_class);
void lost(job_ptr self, std::string reason);
void release(job_ptr self);
void give_back(job_ptr self, const std::string& reason,
               std::chrono::seconds delay = std::chrono::seconds{0});
void deadline_passed(job_ptr self);
void cancel_requested(job_ptr self);
void cancel(job_ptr self);

// How a step runs: defined, with what each does, in actors/job.cpp.
std::vector<log::field> log_fields(const job_state& st);
std::chrono::seconds step_timeout_of(const job_state& st);
void begin_step(job_state& st, std::string_view step);
std::function<void(std::function<void()>)> begin_request(job_ptr self, std::string_view step,
                                                         std::function<void(error)> on_timeout);
void step_done(job_ptr self, std::string_view outcome, std::string detail = {});
std::vector<audit_event> audit_for(const job_state& st, std::string_view outcome,
                                   std::string detail);
void audit_written(job_state& st, const result<void>& answer);

/// Starts a port call as the job's current step (job_handle::request, for the lifecycle's own).
template <class T, class Start, class Next>
void request_step(job_ptr self, std::string_view step, Start start, Next next) {
  auto post = begin_request(self, step, [next](error e) mutable { next(result<T>{std::move(e)}); });
  start(callback<T>{[post, next](result<T> r) mutable {
    post([next, r = std::move(r)]() mutable { next(std::move(r)); });
  }});
}

} // namespace ingestd::job_detail
