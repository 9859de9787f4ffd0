// The shutdown coordinator: SIGTERM/SIGINT drain the worker gracefully; a second signal, or the
// end of the grace period, makes every job give its work back at once. And the watchdog that
// bounds the whole shutdown even when a call never returns.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/node_context.hpp"
#include "messages/protocol.hpp"

namespace ingestd {

/// `others` are stopped (exit) once every poller has drained; `done` is called last.
shutdown_actor spawn_shutdown(caf::actor_system& sys, std::shared_ptr<node_context> ctx,
                              std::vector<poller_actor> pollers, std::vector<caf::actor> others,
                              std::function<void()> done = {});

/// After the first shutdown request a node gets at most its grace period plus this: room for
/// giving back what is still running and closing the adapters.
constexpr std::chrono::seconds shutdown_margin{30};

/// The hard bound on a shutdown, on a thread of its own that no stuck call can hold up (a
/// database that never answers blocks a connection thread, then the destructors that join it).
/// Once armed, if it is not destroyed before the deadline, it logs what was not released (the
/// claims still held, the jobs in flight, the calls still waiting for an answer, the stage the
/// shutdown was in) and ends the process at once with `exit_code`, without running destructors. The
/// claims it names expire with their lease and their messages reappear with the visibility timeout.
class shutdown_watchdog {
public:
  /// `calls_in_progress` names the adapter calls still waiting (may be empty).
  explicit shutdown_watchdog(int exit_code,
                             std::function<std::vector<std::string>()> calls_in_progress = {})
      : exit_code_(exit_code), calls_in_progress_(std::move(calls_in_progress)) {}
  /// Disarms and joins the thread.
  ~shutdown_watchdog();
  shutdown_watchdog(const shutdown_watchdog&) = delete;
  shutdown_watchdog& operator=(const shutdown_watchdog&) = delete;

  /// Starts the clock: the process ends `after` from now. Only the first call counts.
  void arm(std::chrono::seconds after, std::shared_ptr<const node_context> ctx);
  /// What the shutdown is doing now (a string literal), for the log line.
  void set_stage(const char* stage) { stage_ = stage; }

private:
  void watch(std::chrono::steady_clock::time_point deadline, std::chrono::seconds after,
             const std::shared_ptr<const node_context>& ctx);

  int exit_code_;
  std::function<std::vector<std::string>()> calls_in_progress_;
  std::atomic<const char*> stage_{"draining"};
  std::mutex mtx_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  std::thread thread_;
};

} // namespace ingestd
