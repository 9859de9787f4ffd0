#include "adapters/providers/budget_ledger.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

namespace ingestd {

namespace {

budget_action action_of(const std::string& name, budget_action otherwise) {
  if (name == "hold")
    return budget_action::hold;
  if (name == "downgrade")
    return budget_action::downgrade;
  return otherwise;
}

std::string money(double x, const std::string& currency) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f ", x);
  return buf + currency;
}

} // namespace

std::string budget_verdict::describe() const {
  return "the tenant's monthly budget of " + money(budget, currency) + " is spent ("
         + money(spent, currency) + " in " + month + ")";
}

double cost_of(const month_usage& use, const config::usage_section& prices) {
  return static_cast<double>(use.llm_input_tokens) * prices.llm_input_price_per_million_tokens / 1e6
         + static_cast<double>(use.llm_output_tokens) * prices.llm_output_price_per_million_tokens
               / 1e6
         + static_cast<double>(use.document_ai_pages) * prices.document_ai_price_per_thousand_pages
               / 1e3;
}

std::shared_ptr<budget_ledger>
budget_ledger::make(const config& cfg,
                    const std::function<std::shared_ptr<usage_repository>()>& open_db,
                    clock_fn clock) {
  auto budgets = tenant_budgets_of(cfg.usage.tenant_budgets);
  auto fallback = action_of(cfg.usage.budget_action, budget_action::downgrade);
  std::map<uuid, limit> tenants;
  bool any = cfg.usage.monthly_budget > 0;
  // The configuration was checked when it was loaded: an entry that does not parse is not here.
  for (auto& b : budgets ? *budgets : std::vector<tenant_budget>{}) {
    auto id = uuid::parse(b.tenant);
    if (!id)
      continue;
    tenants[*id] = limit{b.amount, action_of(b.action, fallback)};
    any = any || b.amount > 0;
  }
  if (!any)
    return nullptr;
  if (!clock)
    clock = [] { return std::chrono::steady_clock::now(); };
  return std::make_shared<budget_ledger>(cfg.usage, std::move(tenants), open_db(),
                                         std::move(clock));
}

budget_ledger::budget_ledger(const config::usage_section& usage, std::map<uuid, limit> tenants,
                             std::shared_ptr<usage_repository> db, clock_fn clock)
    : prices_(usage), default_{usage.monthly_budget,
                               action_of(usage.budget_action, budget_action::downgrade)},
      tenants_(std::move(tenants)), recheck_(std::max(usage.budget_recheck_seconds, 1)),
      db_(std::move(db)), use_(
                              recheck_,
                              [db = db_](const uuid& tenant, callback<month_usage> done) {
                                db->month_usage_of(tenant, std::move(done));
                              },
                              std::move(clock)) {}

const budget_ledger::limit* budget_ledger::budget_of(const uuid& tenant) const {
  auto it = tenants_.find(tenant);
  const auto* l = it == tenants_.end() ? &default_ : &it->second;
  return l->amount > 0 ? l : nullptr;
}

budget_verdict budget_ledger::verdict_of(const limit& l, const month_usage& use) const {
  budget_verdict v;
  v.spent = cost_of(use, prices_);
  v.budget = l.amount;
  v.exceeded = v.spent >= l.amount;
  v.action = l.action;
  v.currency = prices_.currency;
  v.month = use.month;
  return v;
}

void budget_ledger::check(const uuid& tenant, callback<budget_verdict> done) {
  const auto* l = budget_of(tenant);
  if (l == nullptr)
    return done(budget_verdict{});
  use_.get(tenant, [self = shared_from_this(), tenant, l = *l,
                    done = std::move(done)](result<month_usage> r) {
    if (!r)
      return done(r.error());
    auto v = self->verdict_of(l, *r);
    self->notice(tenant, v);
    done(std::move(v));
  });
}

void budget_ledger::notice(const uuid& tenant, const budget_verdict& v) {
  if (!v.exceeded)
    return;
  {
    std::lock_guard lock{mtx_};
    auto& noticed = noticed_[tenant];
    if (noticed == v.month)
      return;
    noticed = v.month;
  }
  auto action = v.action == budget_action::hold ? "hold" : "downgrade";
  db_->budget_exceeded(
      budget_notice{tenant, v.month, v.spent, v.budget, v.currency, action},
      [self = shared_from_this(), tenant, month = v.month](const result<bool>& written) {
        // Not recorded (the database went away): a later check tries again.
        if (!written) {
          std::lock_guard lock{self->mtx_};
          auto& noticed = self->noticed_[tenant];
          if (noticed == month)
            noticed.clear();
        }
      });
}

} // namespace ingestd
