#include "retention/pruner.hpp"

#include <set>
#include <vector>

#include "actors/metrics.hpp"
#include "adapters/support/log.hpp"
#include "retention/objects.hpp"

namespace ingestd {

result<retention_policy> retention_policy::from(const config::retention_section& r) {
  auto tenants = tenant_retention_of(r.tenant_days);
  if (!tenants)
    return tenants.error();
  retention_policy p;
  p.originals.days = r.originals_days;
  p.derived.days = r.derived_days;
  p.audit.days = r.audit_days;
  p.events.days = r.events_days;
  for (const auto& t : *tenants) {
    auto id = uuid::parse(t.tenant);
    if (!id)
      continue;
    if (t.originals_days >= 0)
      p.originals.tenants.emplace_back(*id, t.originals_days);
    if (t.derived_days >= 0)
      p.derived.tenants.emplace_back(*id, t.derived_days);
    if (t.audit_days >= 0)
      p.audit.tenants.emplace_back(*id, t.audit_days);
    if (t.events_days >= 0)
      p.events.tenants.emplace_back(*id, t.events_days);
  }
  return p;
}

pruner::pruner(std::unique_ptr<pg_retention_repository> db, std::shared_ptr<object_store> store,
               retention_policy policy, int batch_size, std::shared_ptr<worker_metrics> metrics,
               std::chrono::milliseconds storage_timeout)
    : db_(std::move(db)), store_(std::move(store)), policy_(std::move(policy)),
      batch_(std::max(batch_size, 1)), metrics_(std::move(metrics)), timeout_(storage_timeout) {}

result<bool> pruner::pass() {
  auto r = prune();
  if (!r)
    return r.error();
  if (metrics_) {
    metrics_->pruned_originals += r->originals;
    metrics_->pruned_derived += r->derived;
    metrics_->pruned_audit_rows += r->audit_rows;
    metrics_->pruned_events += r->events;
  }
  if (r->originals + r->derived + r->audit_rows + r->events > 0)
    log::info("retention pruned", {{"originals", r->originals},
                                   {"derived_objects", r->derived},
                                   {"audit_rows", r->audit_rows},
                                   {"events", r->events}});
  return r->more;
}

result<int64_t> pruner::prune_originals(bool& full) {
  if (!policy_.originals.any())
    return 0;
  auto due = db_->due_originals(policy_.originals, batch_);
  if (!due)
    return due.error();
  full = full || static_cast<int>(due->size()) >= batch_;
  std::set<std::string> keys;
  std::vector<uuid> documents;
  for (const auto& d : *due) {
    keys.insert(d.file_path);
    documents.push_back(d.document_id);
  }
  auto removed = objects::remove(*store_, keys, timeout_);
  if (!removed)
    return removed.error();
  if (auto marked = db_->originals_pruned(documents); !marked)
    return marked.error();
  return *removed;
}

result<int64_t> pruner::prune_derived(bool& full) {
  if (!policy_.derived.any())
    return 0;
  auto due = db_->due_derived_objects(policy_.derived, batch_);
  if (!due)
    return due.error();
  full = full || static_cast<int>(due->size()) >= batch_;
  std::set<std::string> keys;
  std::set<std::pair<std::string, std::string>> documents;
  std::vector<uuid> ingestions;
  for (const auto& d : *due) {
    for (const auto* key : {&d.transcription_file_path, &d.preprocessed_file_path})
      if (!key->empty())
        keys.insert(*key);
    // What storage holds under the ingestion's prefix, named by its row or not: an attempt cut
    // off before it recorded its outcome (a crash on every attempt until the claim failed it as
    // poison) leaves a transcription and a derived file that no row names.
    auto held = objects::list(
        *store_, storage_keys::ingestion_prefixes(d.tenant_id.str(), d.ingestion_id.str()).front(),
        timeout_);
    if (!held)
      return held.error();
    keys.insert(held->begin(), held->end());
    documents.emplace(d.tenant_id.str(), d.document_id.str());
    ingestions.push_back(d.ingestion_id);
  }
  // The desk's page renders of each document (a cache: made again from the original if asked).
  for (const auto& [tenant, document] : documents) {
    auto prefix = tenant;
    prefix.append("/review/pages/").append(document).append("/");
    auto renders = objects::list(*store_, prefix, timeout_);
    if (!renders)
      return renders.error();
    keys.insert(renders->begin(), renders->end());
  }
  auto removed = objects::remove(*store_, keys, timeout_);
  if (!removed)
    return removed.error();
  if (auto marked = db_->derived_pruned(ingestions); !marked)
    return marked.error();
  return *removed;
}

result<prune_report> pruner::prune() {
  prune_report report;
  auto originals = prune_originals(report.more);
  if (!originals)
    return originals.error();
  report.originals = *originals;
  auto derived = prune_derived(report.more);
  if (!derived)
    return derived.error();
  report.derived = *derived;
  if (policy_.audit.any()) {
    auto audit = db_->prune_audit(policy_.audit, batch_);
    if (!audit)
      return audit.error();
    report.audit_rows = audit->first;
    report.more = report.more || audit->second >= batch_;
  }
  if (policy_.events.any()) {
    auto events = db_->prune_events(policy_.events, batch_);
    if (!events)
      return events.error();
    report.events = *events;
    report.more = report.more || *events >= batch_;
  }
  return report;
}

} // namespace ingestd
