#include "adapters/db/pg_learning_repository.hpp"

namespace ingestd {

namespace {

// A document's first review saw the machine's data; later ones see an earlier reviewer's.
constexpr pg::statement reviews_sql{"ingestd_calibration_reviews", R"sql(
WITH first AS (
  SELECT DISTINCT ON (r.document_id) r.action, r.machine_data, r.changes, r.at
    FROM document_review AS r
   WHERE r.tenant_id = $1
   ORDER BY r.document_id, r.at, r.id
)
SELECT COALESCE(f.machine_data->>'confidence', ''), k.field, count(*),
       count(*) FILTER (WHERE NOT f.changes ? k.field)
  FROM first AS f
 CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(f.machine_data) = 'object'
                                    THEN f.machine_data ELSE '{}'::jsonb END) AS k(field, value)
 WHERE f.action = 'approve' AND f.at > now() - interval '90 days'
   AND k.field NOT IN ('confidence', 'extraction_successful', 'missing_fields')
   AND k.value NOT IN ('null'::jsonb, '""'::jsonb, '[]'::jsonb)
 GROUP BY 1, 2
 ORDER BY 1, 2
)sql"};

constexpr pg::statement facts_sql{"ingestd_supplier_facts", R"sql(
SELECT supplier, field, value, reviews FROM supplier_knowledge WHERE tenant_id = $1
 ORDER BY supplier, field
)sql"};

} // namespace

pg_learning_repository::pg_learning_repository(std::string database_url,
                                               pg::session_options session)
    : pool_(std::make_unique<pg::pool>(std::move(database_url),
                                       pg::pool_options{1, "ingestd-learn", session})) {}

pg_learning_repository::~pg_learning_repository() = default;

void pg_learning_repository::reviews_of(uuid tenant, callback<std::vector<field_reviews>> done) {
  pool_->call(std::move(done), [tenant](pg::connection& conn, const auto& done) {
    auto res = conn.exec(reviews_sql, {tenant.str()});
    if (!res)
      return done(res.error());
    std::vector<field_reviews> out;
    out.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      out.push_back(field_reviews{res->str(r, 0), res->str(r, 1), res->i64(r, 2), res->i64(r, 3)});
    done(std::move(out));
  });
}

void pg_learning_repository::facts_of(uuid tenant, callback<std::vector<supplier_fact>> done) {
  pool_->call(std::move(done), [tenant](pg::connection& conn, const auto& done) {
    auto res = conn.exec(facts_sql, {tenant.str()});
    if (!res)
      return done(res.error());
    std::vector<supplier_fact> out;
    out.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      out.push_back(supplier_fact{res->str(r, 0), res->str(r, 1), res->str(r, 2), res->i64(r, 3)});
    done(std::move(out));
  });
}

} // namespace ingestd
