// The budgets' database port over PostgreSQL (migration 021): one connection thread; each call
// is one statement (a tenant's month: a sum over one index range of tenant_usage).
#pragma once

#include <memory>
#include <string>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/usage_repository.hpp"

namespace ingestd {

class pg_usage_repository final : public usage_repository {
public:
  pg_usage_repository(std::string database_url, pg::session_options session = {});
  ~pg_usage_repository() override;

  void month_usage_of(uuid tenant, callback<month_usage> done) override;
  void budget_exceeded(budget_notice notice, callback<bool> done) override;

private:
  std::unique_ptr<pg::pool> pool_;
};

} // namespace ingestd
