// Monthly budgets per tenant: what a tenant's documents cost this month (LLM tokens and Document
// AI pages at the usage.* prices, as `ingestd usage` prices them) against its budget, asked by the
// ingest stage before a paid provider reads a document. A tenant's cost comes from the database
// (one row, migration 021) and is reused for usage.budget_recheck_seconds; a tenant without a
// budget costs no query. The first time a node finds a tenant's month at its budget, it records
// the notice, which emits one BUDGET_EXCEEDED event per tenant and month across the cluster.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "adapters/db/tenant_cache.hpp"
#include "adapters/db/usage_repository.hpp"
#include "config/config.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

enum class budget_action : uint8_t {
  /// The local providers read the document, and its ingestion says so.
  downgrade,
  /// The work stays queued and asks again after usage.budget_recheck_seconds.
  hold,
};

/// A tenant's month against its budget.
struct budget_verdict {
  bool exceeded = false;
  budget_action action = budget_action::downgrade;
  double spent = 0;
  double budget = 0;
  std::string currency;
  std::string month;

  /// "the monthly budget of 0.30 USD is spent (0.38 USD in 2026-11)".
  std::string describe() const;
};

/// The cost of a month's use at the configured prices.
double cost_of(const month_usage& use, const config::usage_section& prices);

class budget_ledger : public std::enable_shared_from_this<budget_ledger> {
public:
  struct limit {
    double amount = 0;
    budget_action action = budget_action::downgrade;
  };
  using clock_fn = std::function<std::chrono::steady_clock::time_point()>;

  /// The ledger of `cfg`'s budgets over the repository `open_db` makes; null (and no repository
  /// made) when the configuration sets none (a tenant budget of 0 sets none for that tenant).
  static std::shared_ptr<budget_ledger>
  make(const config& cfg, const std::function<std::shared_ptr<usage_repository>()>& open_db,
       clock_fn clock = {});

  budget_ledger(const config::usage_section& usage, std::map<uuid, limit> tenants,
                std::shared_ptr<usage_repository> db, clock_fn clock);

  /// The tenant's budget, if it has one.
  const limit* budget_of(const uuid& tenant) const;
  /// How long held work waits before it asks again.
  std::chrono::seconds recheck() const { return recheck_; }

  /// The tenant's month against its budget (not exceeded when it has none), from the tenant's
  /// cost read within usage.budget_recheck_seconds (tenant_cache). `done` may run on the
  /// caller's thread or the repository's.
  void check(const uuid& tenant, callback<budget_verdict> done);

private:
  budget_verdict verdict_of(const limit& l, const month_usage& use) const;
  /// Records the notice of the tenant's month at its budget, once per month from this node.
  void notice(const uuid& tenant, const budget_verdict& v);

  config::usage_section prices_;
  limit default_;
  std::map<uuid, limit> tenants_;
  std::chrono::seconds recheck_;
  std::shared_ptr<usage_repository> db_;
  tenant_cache<month_usage> use_;
  std::mutex mtx_;
  /// The month whose notice this node recorded, per tenant.
  std::map<uuid, std::string> noticed_;
};

} // namespace ingestd
