// Metrics bookkeeping and the Prometheus text rendering.
#include "actors/metrics.hpp"

#include "actors/admission.hpp"
#include "actors/memory_budget.hpp"

#include <cstdio>
#include <limits>

namespace ingestd {

namespace {

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void gauge(std::string& out, std::string_view name, std::string_view help, int64_t value,
           std::string_view type = "gauge") {
  header(out, name, type, help);
  out += name;
  out += ' ' + std::to_string(value) + '\n';
}

/// A Prometheus label value: backslash, double quote and line feed escaped.
std::string label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"')
      out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

} // namespace

void histogram::observe(double seconds) {
  for (size_t i = 0; i < bounds.size(); ++i)
    if (seconds <= bounds[i])
      ++buckets_[i];
  ++count_;
  sum_ += seconds;
}

void histogram::render(std::string& out, std::string_view name, std::string_view labels) const {
  auto with = [&](std::string_view extra) {
    std::string l{labels};
    if (!extra.empty())
      l += (l.empty() ? "" : ",") + std::string{extra};
    return l.empty() ? std::string{} : "{" + l + "}";
  };
  for (size_t i = 0; i < bounds.size(); ++i)
    out += std::string{name} + "_bucket" + with("le=\"" + number(bounds[i]) + "\"") + " "
           + std::to_string(buckets_[i]) + "\n";
  out += std::string{name} + "_bucket" + with("le=\"+Inf\"") + " " + std::to_string(count_) + "\n";
  out += std::string{name} + "_sum" + with("") + " " + number(sum_) + "\n";
  out += std::string{name} + "_count" + with("") + " " + std::to_string(count_) + "\n";
}

double histogram::quantile_upper_bound(double q) const {
  auto target = static_cast<uint64_t>(q * static_cast<double>(count_) + 0.999999);
  for (size_t i = 0; i < bounds.size(); ++i)
    if (buckets_[i] >= target)
      return bounds[i];
  return std::numeric_limits<double>::infinity();
}

std::pair<double, uint64_t> worker_metrics::heartbeat_lateness_quantile(double q) const {
  std::lock_guard guard{mtx_};
  return {heartbeat_lateness_.quantile_upper_bound(q), heartbeat_lateness_.count()};
}

void worker_metrics::set_node(const std::string& id, const std::string& version,
                              const std::string& stages, const std::string& classes) {
  std::lock_guard guard{mtx_};
  node_labels_ = "node=\"" + label_value(id) + "\",version=\"" + label_value(version)
                 + "\",stages=\"" + label_value(stages) + "\",classes=\"" + label_value(classes)
                 + "\"";
}

void worker_metrics::add_stage(std::string_view stage) {
  std::lock_guard guard{mtx_};
  if (stage_in_flight_.find(stage) == stage_in_flight_.end())
    stage_in_flight_.emplace(std::string{stage}, 0);
}

void worker_metrics::watch(std::shared_ptr<const node_admission> admission) {
  std::lock_guard guard{mtx_};
  admission_ = std::move(admission);
}

void worker_metrics::watch(std::shared_ptr<const memory_budget> unpack_budget) {
  std::lock_guard guard{mtx_};
  unpack_budget_ = std::move(unpack_budget);
}

void worker_metrics::job_started(std::string_view stage) {
  std::lock_guard guard{mtx_};
  auto i = stage_in_flight_.find(stage);
  if (i == stage_in_flight_.end())
    i = stage_in_flight_.emplace(std::string{stage}, 0).first;
  ++i->second;
}

void worker_metrics::job_ended(std::string_view stage) {
  std::lock_guard guard{mtx_};
  if (auto i = stage_in_flight_.find(stage); i != stage_in_flight_.end())
    --i->second;
}

void worker_metrics::job_finished(std::string_view stage, std::string_view outcome,
                                  std::string_view error_class, std::string_view tenant) {
  std::lock_guard guard{mtx_};
  ++jobs_[std::make_tuple(std::string{stage}, std::string{outcome}, std::string{error_class})];
  if (tenant.empty() || outcome != "completed")
    return;
  if (tenants_.find(tenant) == tenants_.end()) {
    if (tenants_.size() >= max_tenant_series)
      tenant = "other";
    else
      tenants_.emplace(tenant);
  }
  ++tenant_completed_[std::make_pair(std::string{tenant}, std::string{stage})];
}

void worker_metrics::step_duration(std::string_view stage, std::string_view step, double seconds) {
  std::lock_guard guard{mtx_};
  steps_[std::make_pair(std::string{stage}, std::string{step})].observe(seconds);
}

void worker_metrics::claim_wait(double seconds) {
  std::lock_guard guard{mtx_};
  claim_wait_.observe(seconds);
}

void worker_metrics::heartbeat_lateness(double seconds) {
  std::lock_guard guard{mtx_};
  heartbeat_lateness_.observe(seconds);
}

uint64_t worker_metrics::jobs(std::string_view outcome) const {
  std::lock_guard guard{mtx_};
  uint64_t total = 0;
  for (auto& [key, n] : jobs_)
    if (std::get<1>(key) == outcome)
      total += n;
  return total;
}

std::string worker_metrics::prometheus() const {
  std::string out;
  std::lock_guard guard{mtx_};
  if (!node_labels_.empty()) {
    header(
        out, "ingestd_node_info", "gauge",
        "This node: its id (as ingestd nodes shows it), version, stages and size classes served.");
    out += "ingestd_node_info{" + node_labels_ + "} 1\n";
  }
  header(out, "ingestd_jobs_total", "counter", "Jobs finished, by stage, outcome and error class.");
  for (auto& [key, n] : jobs_)
    out += "ingestd_jobs_total{stage=\"" + std::get<0>(key) + "\",outcome=\"" + std::get<1>(key)
           + "\",error_class=\"" + std::get<2>(key) + "\"} " + std::to_string(n) + "\n";
  header(out, "ingestd_tenant_completed_total", "counter",
         "Jobs this node completed, by tenant and stage.");
  for (auto& [key, n] : tenant_completed_)
    out += "ingestd_tenant_completed_total{tenant=\"" + key.first + "\",stage=\"" + key.second
           + "\"} " + std::to_string(n) + "\n";
  header(out, "ingestd_step_duration_seconds", "histogram", "Duration of each step, by stage.");
  for (auto& [key, h] : steps_)
    h.render(out, "ingestd_step_duration_seconds",
             "stage=\"" + key.first + "\",step=\"" + key.second + "\"");
  header(out, "ingestd_claim_wait_seconds", "histogram",
         "Time from a message's first send to the claim of its work item.");
  claim_wait_.render(out, "ingestd_claim_wait_seconds", "");
  header(out, "ingestd_heartbeat_lateness_seconds", "histogram",
         "How late heartbeat ticks fired against their schedule.");
  heartbeat_lateness_.render(out, "ingestd_heartbeat_lateness_seconds", "");
  header(out, "ingestd_jobs_in_flight", "gauge", "Jobs running now, by stage.");
  for (auto& [stage, n] : stage_in_flight_)
    out += "ingestd_jobs_in_flight{stage=\"" + stage + "\"} " + std::to_string(n) + "\n";
  gauge(out, "ingestd_tracked_claims", "Claims the heartbeat keeps alive.", tracked_claims.load());
  if (admission_) {
    auto& a = *admission_;
    gauge(out, "ingestd_cpu_pool_backlog", "Work items waiting for a CPU pool worker.",
          a.cpu_backlog());
    header(out, "ingestd_cpu_item_seconds", "gauge",
           "Moving average of a CPU pool item's run time.");
    out += "ingestd_cpu_item_seconds " + std::to_string(static_cast<double>(a.cpu_item_us()) / 1e6)
           + "\n";
    header(out, "ingestd_capacity_usage_ratio", "gauge",
           "Weighted slots in use over worker.capacity_slots (jobs over worker.max_in_flight "
           "without a budget).");
    out.append("ingestd_capacity_usage_ratio ")
        .append(std::to_string(a.usage_ratio()))
        .append("\n");
    gauge(out, "ingestd_capacity_slots_in_use", "Weighted slots held by running jobs.",
          a.slots_in_use());
    gauge(out, "ingestd_lifetime_units_admitted_total",
          "Units of work admitted (worker.lifetime_units).", a.units_admitted(), "counter");
  }
  if (unpack_budget_) {
    auto& b = *unpack_budget_;
    gauge(out, "ingestd_unpack_memory_budget_bytes",
          "The node's memory budget for unpacking containers (containers.memory_budget_bytes).",
          static_cast<int64_t>(b.total()));
    gauge(out, "ingestd_unpack_memory_reserved_bytes",
          "Bytes of the unpack memory budget reserved by containers being unpacked.",
          static_cast<int64_t>(b.reserved()));
    gauge(out, "ingestd_unpack_memory_waiting", "Containers waiting for unpack memory budget.",
          static_cast<int64_t>(b.waiting()));
  }
  gauge(out, "ingestd_cpu_admission_waits_total",
        "Polls held back because the CPU pool could not finish more work within its deadline.",
        cpu_admission_waits.load(), "counter");
  gauge(out, "ingestd_sweeper_rescues_total", "Work items whose message the sweeper sent again.",
        rescues.load(), "counter");
  gauge(out, "ingestd_known_file_skips_total",
        "Ingestions ended skipped at their claim because the document is a known file.",
        known_file_skips.load(), "counter");
  gauge(out, "ingestd_escalations_total", "Work moved from the small to the large size class.",
        escalations.load(), "counter");
  gauge(out, "ingestd_outbox_dead_total",
        "Outbox rows this node's relay declared dead after outbox.max_attempts failed sends.",
        outbox_dead.load(), "counter");
  gauge(out, "ingestd_admission_give_backs_total",
        "Received messages whose slots another stage took meanwhile: made visible again.",
        admission_give_backs.load(), "counter");
  gauge(out, "ingestd_queue_receive_errors_total", "Failed queue receives.",
        queue_receive_errors.load(), "counter");
  header(out, "ingestd_budget_actions_total", "counter",
         "Documents whose tenant's monthly budget was spent, by what they met.");
  out += "ingestd_budget_actions_total{action=\"downgrade\"} "
         + std::to_string(budget_downgraded.load()) + "\n";
  out += "ingestd_budget_actions_total{action=\"hold\"} " + std::to_string(budget_held.load())
         + "\n";
  header(out, "ingestd_retention_pruned_total", "counter",
         "What retention removed, by kind (objects, or audit rows).");
  out += "ingestd_retention_pruned_total{kind=\"originals\"} "
         + std::to_string(pruned_originals.load()) + "\n";
  out += "ingestd_retention_pruned_total{kind=\"derived\"} " + std::to_string(pruned_derived.load())
         + "\n";
  out += "ingestd_retention_pruned_total{kind=\"audit_rows\"} "
         + std::to_string(pruned_audit_rows.load()) + "\n";
  out += "ingestd_retention_pruned_total{kind=\"events\"} " + std::to_string(pruned_events.load())
         + "\n";
  header(out, "ingestd_llm_tokens_total", "counter", "LLM tokens used, by direction.");
  out += "ingestd_llm_tokens_total{direction=\"input\"} " + std::to_string(llm_input_tokens.load())
         + "\n";
  out += "ingestd_llm_tokens_total{direction=\"output\"} "
         + std::to_string(llm_output_tokens.load()) + "\n";
  return out;
}

} // namespace ingestd
