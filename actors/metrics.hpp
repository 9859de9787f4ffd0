// The worker's metrics: counters, gauges and histograms updated by the actors and rendered in
// the Prometheus text format for the admin endpoint's /metrics.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

namespace ingestd {

/// A fixed-bucket histogram of seconds.
class histogram {
public:
  static constexpr std::array<double, 14> bounds{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                 0.5,   1,     2.5,  5,     10,   30,  120};
  void observe(double seconds);
  /// Appends the _bucket, _sum and _count lines of `name` with `labels` ("" or `step="claim"`).
  void render(std::string& out, std::string_view name, std::string_view labels) const;
  /// The upper bound of the bucket holding quantile `q` (0..1); +inf beyond the last bucket.
  double quantile_upper_bound(double q) const;
  uint64_t count() const { return count_; }

private:
  std::array<uint64_t, bounds.size()> buckets_{};
  uint64_t count_ = 0;
  double sum_ = 0;
};

class node_admission;
class memory_budget;

class worker_metrics {
public:
  /// Polls the poller held back because the CPU pool could not finish more work in time.
  std::atomic<int64_t> cpu_admission_waits{0};
  std::atomic<int64_t> rescues{0};
  /// Ingestions the claim ended `skipped` (reason known_file).
  std::atomic<int64_t> known_file_skips{0};
  std::atomic<int64_t> llm_input_tokens{0};
  std::atomic<int64_t> llm_output_tokens{0};
  std::atomic<int64_t> tracked_claims{0};
  std::atomic<int64_t> queue_receive_errors{0};

  /// Outbox rows this node's relay declared dead (outbox.max_attempts failed sends).
  std::atomic<int64_t> outbox_dead{0};
  /// Work moved from the small size class to the large one.
  std::atomic<int64_t> escalations{0};
  /// Messages received when their slots had been taken meanwhile (by another stage's poller):
  /// made visible again at once.
  std::atomic<int64_t> admission_give_backs{0};
  /// Documents whose tenant's monthly budget was spent: read with the local providers, or held.
  std::atomic<int64_t> budget_downgraded{0};
  std::atomic<int64_t> budget_held{0};
  /// What retention pruned: originals, derived objects, audit rows.
  std::atomic<int64_t> pruned_originals{0};
  std::atomic<int64_t> pruned_derived{0};
  std::atomic<int64_t> pruned_audit_rows{0};
  std::atomic<int64_t> pruned_events{0};

  /// The node's admission, whose figures (in flight, slots, units, the CPU backlog) the
  /// exposition shows; set by the node's builder.
  void watch(std::shared_ptr<const node_admission> admission);
  /// The unpack stage's memory budget, whose reserved bytes and waiting containers it shows; set
  /// by that stage's builder.
  void watch(std::shared_ptr<const memory_budget> unpack_budget);

  /// Who this node is, for ingestd_node_info (set once at start, before the first scrape): its id
  /// (worker.id, as `ingestd nodes` shows it), version, and the stages and size classes it serves.
  void set_node(const std::string& id, const std::string& version, const std::string& stages,
                const std::string& classes);
  /// A stage this node runs: its series exist (at zero) before its first job.
  void add_stage(std::string_view stage);
  /// A job of `stage` started / ended (the stage's count in flight).
  void job_started(std::string_view stage);
  void job_ended(std::string_view stage);
  /// A job of `stage` ended with `outcome` ("completed", "failed", ...) and, unless it completed,
  /// the error class ("transient", "permanent", "claim_lost", or "none"). A completion counts for
  /// its `tenant` too (empty: the job held no claim), for at most max_tenant_series tenants: later
  /// ones count as tenant "other".
  void job_finished(std::string_view stage, std::string_view outcome, std::string_view error_class,
                    std::string_view tenant = {});
  static constexpr size_t max_tenant_series = 1000;
  void step_duration(std::string_view stage, std::string_view step, double seconds);
  /// From the message's first send to its claim.
  void claim_wait(double seconds);
  /// How late a heartbeat tick fired against its schedule.
  void heartbeat_lateness(double seconds);

  /// Quantile `q` of the heartbeat lateness, as the upper bound of its bucket, and the ticks seen.
  std::pair<double, uint64_t> heartbeat_lateness_quantile(double q) const;

  /// Counter of jobs with this outcome (all error classes), for tests and status.
  uint64_t jobs(std::string_view outcome) const;

  /// Prometheus text exposition of everything above (without the queue figures, which the
  /// admin endpoint adds).
  std::string prometheus() const;

private:
  mutable std::mutex mtx_;
  /// By stage, outcome and error class.
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> jobs_;
  /// Completions by tenant and stage, and the tenants that have series.
  std::map<std::pair<std::string, std::string>, uint64_t> tenant_completed_;
  std::set<std::string, std::less<>> tenants_;
  /// By stage and step.
  std::map<std::pair<std::string, std::string>, histogram> steps_;
  std::map<std::string, int64_t, std::less<>> stage_in_flight_;
  /// The labels of ingestd_node_info (empty until set_node).
  std::string node_labels_;
  std::shared_ptr<const node_admission> admission_;
  std::shared_ptr<const memory_budget> unpack_budget_;
  histogram claim_wait_;
  histogram heartbeat_lateness_;
};

} // namespace ingestd
