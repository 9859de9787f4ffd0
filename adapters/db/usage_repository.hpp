// The budgets' database port: a tenant's use of the paid providers this month, and the notice
// that a tenant's month reached its budget (once per tenant and month, with its event).
#pragma once

#include <cstdint>
#include <string>

#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// A tenant's use of the paid providers in one month (UTC).
struct month_usage {
  /// "YYYY-MM".
  std::string month;
  int64_t llm_input_tokens = 0;
  int64_t llm_output_tokens = 0;
  int64_t document_ai_pages = 0;
};

/// A tenant's month that reached its budget.
struct budget_notice {
  uuid tenant;
  std::string month;
  double spent = 0;
  double budget = 0;
  std::string currency;
  /// "downgrade" or "hold".
  std::string action;
};

class usage_repository {
public:
  virtual ~usage_repository() = default;
  /// The tenant's use in the current month (zeros when it used nothing).
  virtual void month_usage_of(uuid tenant, callback<month_usage> done) = 0;
  /// Records the notice and emits BUDGET_EXCEEDED unless the month has one already: true when
  /// this call wrote it.
  virtual void budget_exceeded(budget_notice notice, callback<bool> done) = 0;
};

} // namespace ingestd
