// What the node may take on now: jobs in flight (worker.max_in_flight), weighted slots
// (worker.capacity_slots), units of work over its life (worker.lifetime_units), and what the CPU
// pool can finish within the OCR deadline. Shared by the pollers of every stage (each admits on
// its own actor, so every decision is an atomic step), fed by the jobs and the CPU pool, read by
// the metrics and the node registry.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace ingestd {

class node_admission {
public:
  struct limits {
    /// Jobs of all stages in flight at most.
    int max_in_flight = 1000;
    /// Weighted slots the stages share (0: no budget, the in-flight limits alone).
    int capacity_slots = 0;
    /// Units of work (the weights of the jobs admitted) after which the node drains (0: never).
    int64_t lifetime_units = 0;
    /// The CPU pool's workers, and the OCR deadline: work is admitted only while the pool's
    /// backlog can be worked off within half of it.
    int cpu_workers = 1;
    std::chrono::seconds cpu_deadline{300};
  };

  explicit node_admission(const limits& l) : limits_(l) {}

  /// Sets the limits: before the node starts (its builder does, from the node's settings).
  void configure(const limits& l) { limits_ = l; }
  const limits& configured() const { return limits_; }

  // -- the pollers' questions ----------------------------------------------------------------

  /// Jobs that may start before the node's in-flight limit.
  int64_t room_in_flight() const { return limits_.max_in_flight - in_flight_.load(); }
  /// How many jobs of `weight` fit in the free slots now (no budget: any number). A job heavier
  /// than the whole budget fits when no slot is in use.
  int64_t jobs_that_fit(int weight) const;
  /// How many more jobs of `weight` the lifetime admits (the last may take more units than
  /// are left); 0 once it is used up.
  int64_t jobs_left_in_lifetime(int weight) const;
  /// The CPU pool's backlog would take more than half the OCR deadline to work off: work admitted
  /// now would wait for a worker past its deadline and only be given back.
  bool cpu_saturated() const;

  /// Takes one job's slots and units if they are still free (the last check: pollers admit what
  /// they received concurrently). false: given nothing.
  bool admit(int weight);
  /// A job admitted by admit() ended after `ran`: its slots are free again, its slot-time counted.
  void release(int weight, std::chrono::milliseconds ran);

  /// A job actor started or ended (any stage).
  void job_started() { ++in_flight_; }
  void job_ended() { --in_flight_; }

  /// A receive brought nothing (answers the empty receives in a row), or something.
  int64_t idle_receive() { return ++idle_receives_; }
  void busy_receive() { idle_receives_ = 0; }

  // -- the database, as the jobs found it ----------------------------------------------------

  /// A job gave its work back because the database did not answer it (a connection lost or
  /// still reconnecting). While such give-backs come in a row, the pollers rest, then take one
  /// message at a time: a node that cannot reach the database takes no work from the nodes that
  /// can, and does not spend its messages' receives (a dead-letter redrive counts them).
  void database_failed() { ++database_failures_; }
  /// A job's outcome reached the database: the pollers take work as usual again.
  void database_answered() { database_failures_ = 0; }
  /// Jobs given back in a row because the database did not answer.
  int64_t database_failures() const { return database_failures_.load(); }

  // -- the CPU pool's reports ----------------------------------------------------------------

  /// Work items waiting for a CPU worker now.
  void cpu_backlog_is(int64_t items) { cpu_backlog_ = items; }
  /// Folds one item's run time into the moving average (weight 1/8).
  void cpu_item_ran(std::chrono::microseconds took);

  // -- figures ---------------------------------------------------------------------------------

  int64_t in_flight() const { return in_flight_.load(); }
  int64_t slots_in_use() const { return slots_in_use_.load(); }
  int64_t peak_slots_in_use() const { return peak_slots_.load(); }
  int64_t slot_ms_used() const { return slot_ms_used_.load(); }
  int64_t units_admitted() const { return units_admitted_.load(); }
  int64_t idle_receives() const { return idle_receives_.load(); }
  int64_t cpu_backlog() const { return cpu_backlog_.load(); }
  int64_t cpu_item_us() const { return cpu_item_us_.load(); }
  /// Slots in use over the budget (or jobs in flight over max_in_flight without one).
  double usage_ratio() const;

private:
  limits limits_;
  std::atomic<int64_t> in_flight_{0};
  std::atomic<int64_t> slots_in_use_{0};
  std::atomic<int64_t> peak_slots_{0};
  std::atomic<int64_t> slot_ms_used_{0};
  std::atomic<int64_t> units_admitted_{0};
  std::atomic<int64_t> idle_receives_{0};
  std::atomic<int64_t> database_failures_{0};
  std::atomic<int64_t> cpu_backlog_{0};
  std::atomic<int64_t> cpu_item_us_{0};
};

} // namespace ingestd
