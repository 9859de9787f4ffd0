#include "adapters/db/pg_usage_repository.hpp"

#include <cstdio>

namespace ingestd {

namespace {

constexpr pg::statement month_usage_sql{"ingestd_month_usage", R"sql(
SELECT m.month, COALESCE(sum(u.llm_input_tokens), 0), COALESCE(sum(u.llm_output_tokens), 0),
       COALESCE(sum(u.document_ai_pages), 0)
  FROM (SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM') AS month) AS m
  LEFT JOIN tenant_usage AS u ON u.tenant_id = $1 AND u.month = m.month
 GROUP BY m.month
)sql"};

constexpr pg::statement budget_exceeded_sql{"ingestd_budget_exceeded", R"sql(
WITH n AS (
  INSERT INTO budget_exceeded (tenant_id, month, spent, budget, currency, action)
  VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (tenant_id, month) DO NOTHING
  RETURNING tenant_id, month, spent, budget, currency, action
)
SELECT count(ingestd_emit_event('BUDGET_EXCEEDED', n.tenant_id, NULL, NULL,
                                jsonb_build_object('month', n.month, 'spent', n.spent,
                                                   'budget', n.budget, 'currency', n.currency,
                                                   'action', n.action),
                                n.tenant_id::text))
  FROM n
)sql"};

std::string number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

} // namespace

pg_usage_repository::pg_usage_repository(std::string database_url, pg::session_options session)
    : pool_(std::make_unique<pg::pool>(std::move(database_url),
                                       pg::pool_options{1, "ingestd-usage", session})) {}

pg_usage_repository::~pg_usage_repository() = default;

void pg_usage_repository::month_usage_of(uuid tenant, callback<month_usage> done) {
  pool_->call(std::move(done), [tenant](pg::connection& conn, const auto& done) {
    auto res = conn.exec(month_usage_sql, {tenant.str()});
    if (!res)
      return done(res.error());
    done(month_usage{res->str(0, 0), res->i64(0, 1), res->i64(0, 2), res->i64(0, 3)});
  });
}

void pg_usage_repository::budget_exceeded(budget_notice notice, callback<bool> done) {
  pool_->call(std::move(done), [n = std::move(notice)](pg::connection& conn, const auto& done) {
    auto res = conn.exec(budget_exceeded_sql, {n.tenant.str(), n.month, number(n.spent),
                                               number(n.budget), n.currency, n.action});
    if (!res)
      return done(res.error());
    done(res->i64(0, 0) > 0);
  });
}

} // namespace ingestd
