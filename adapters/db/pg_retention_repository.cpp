#include "adapters/db/pg_retention_repository.hpp"

#include <algorithm>

#include "adapters/db/pg_values.hpp"
#include "adapters/db/pg_work.hpp"

namespace ingestd {

namespace {

// Each row's days: its tenant's own ($1 tenants, $2 days), else the default ($3); 0 keeps it. The
// scan is bounded by the shortest days any tenant has ($5), so the index starts at the oldest.
constexpr std::string_view days_of = R"sql(
  CROSS JOIN LATERAL (
    SELECT COALESCE((SELECT o.days FROM unnest($1::uuid[], $2::integer[]) AS o(tenant, days)
                      WHERE o.tenant = d.tenant_id), $3::integer) AS days) AS r
)sql";

const std::string due_originals_text = std::string{R"sql(
SELECT d.id, d.tenant_id, d.file_path
  FROM document AS d
)sql"} + std::string{days_of} + R"sql(
 WHERE d.original_pruned_at IS NULL
   AND d.created_at < now() - make_interval(days => $5::integer)
   AND r.days > 0 AND d.created_at < now() - make_interval(days => r.days)
   AND NOT EXISTS (SELECT 1 FROM ingestion AS i
                    WHERE i.document_id = d.id
                      AND i.created_at >= now() - make_interval(days => r.days))
   AND NOT EXISTS (SELECT 1 FROM work_item AS w
                    WHERE w.document_id = d.id AND w.status = 'in-progress')
 ORDER BY d.created_at
 LIMIT $4
)sql";
const pg::statement due_originals_sql{"ingestd_retention_originals", due_originals_text.c_str()};

constexpr pg::statement originals_pruned_sql{
    "ingestd_retention_originals_pruned",
    "UPDATE document SET original_pruned_at = now() WHERE id = ANY($1::uuid[])"};

const std::string due_derived_text = std::string{R"sql(
SELECT i.id, d.id, d.tenant_id, COALESCE(i.transcription_file_path, ''),
       COALESCE(i.preprocessed_file_path, '')
  FROM ingestion AS i
  JOIN document AS d ON d.id = i.document_id
)sql"} + std::string{days_of} + R"sql(
 WHERE i.derived_pruned_at IS NULL
   AND i.created_at < now() - make_interval(days => $5::integer)
   AND r.days > 0 AND i.created_at < now() - make_interval(days => r.days)
   AND i.status <> 'in-progress'
 ORDER BY i.created_at
 LIMIT $4
)sql";
const pg::statement due_derived_sql{"ingestd_retention_derived", due_derived_text.c_str()};

constexpr pg::statement derived_pruned_sql{
    "ingestd_retention_derived_pruned",
    "UPDATE ingestion SET derived_pruned_at = now() WHERE id = ANY($1::uuid[])"};

// The audit rows of an ingestion are keyed by its id; the match stage's by its document's.
const std::string prune_audit_text = std::string{R"sql(
WITH due AS (
  SELECT i.id, i.document_id, now() - make_interval(days => r.days) AS cutoff
    FROM ingestion AS i
    JOIN document AS d ON d.id = i.document_id
)sql"} + std::string{days_of} + R"sql(
   WHERE i.audit_pruned_at IS NULL
     AND i.created_at < now() - make_interval(days => $5::integer)
     AND r.days > 0 AND i.created_at < now() - make_interval(days => r.days)
     AND i.status <> 'in-progress'
   ORDER BY i.created_at
   LIMIT $4
   FOR UPDATE OF i SKIP LOCKED
), gone AS (
  DELETE FROM audit_trail AS t USING due
   WHERE (t.ingestion_id = due.id OR t.ingestion_id = due.document_id)
     AND t.written_at < due.cutoff
  RETURNING cardinality(t.steps) AS steps
), marked AS (
  UPDATE ingestion AS i SET audit_pruned_at = now() FROM due WHERE i.id = due.id RETURNING 1
)
SELECT (SELECT COALESCE(sum(steps), 0) FROM gone), (SELECT count(*) FROM marked)
)sql";
const pg::statement prune_audit_sql{"ingestd_retention_audit", prune_audit_text.c_str()};

// The stream's rows ('events') and the sinks' delivered copies ('events:<sink>'), by when they were
// written (the stream's rows are "sent" at once); a row's tenant is its column, or its body's for
// rows written before migration 022. Queue messages of the outbox are never touched.
const std::string prune_events_text = R"sql(
WITH due AS (
  SELECT o.id
    FROM event_outbox AS o
   CROSS JOIN LATERAL (
     SELECT COALESCE((SELECT x.days FROM unnest($1::uuid[], $2::integer[]) AS x(tenant, days)
                       WHERE x.tenant = CASE WHEN o.destination = 'events'
                                               OR o.destination LIKE 'events:%'
                                             THEN COALESCE(o.tenant_id,
                                                           (o.body::jsonb ->> 'tenant_id')::uuid)
                                        END), $3::integer) AS days) AS r
   WHERE o.sent_at IS NOT NULL
     AND o.sent_at < now() - make_interval(days => $5::integer)
     AND (o.destination = 'events' OR o.destination LIKE 'events:%')
     AND r.days > 0 AND o.sent_at < now() - make_interval(days => r.days)
   ORDER BY o.sent_at
   LIMIT $4
)
DELETE FROM event_outbox AS o USING due WHERE o.id = due.id
)sql";
const pg::statement prune_events_sql{"ingestd_retention_events", prune_events_text.c_str()};

std::vector<pg::param> days_params(const retention_days& r, int limit) {
  std::vector<pg::param> tenants, days;
  int shortest = r.days > 0 ? r.days : 36500;
  for (const auto& [tenant, d] : r.tenants) {
    tenants.emplace_back(tenant.str());
    days.emplace_back(std::to_string(d));
    if (d > 0)
      shortest = std::min(shortest, d);
  }
  return {pg::array_literal(tenants), pg::array_literal(days), std::to_string(r.days),
          std::to_string(limit), std::to_string(shortest)};
}

} // namespace

result<int64_t> pg_retention_repository::prune_events(const retention_days& r, int limit) {
  if (auto ok = conn_.ensure(true); !ok)
    return ok.error();
  auto res = conn_.exec(prune_events_sql, days_params(r, limit));
  if (!res)
    return res.error();
  return res->affected();
}

bool retention_days::any() const {
  return days > 0
         || std::any_of(tenants.begin(), tenants.end(), [](const auto& t) { return t.second > 0; });
}

pg_retention_repository::pg_retention_repository(std::string database_url,
                                                 pg::session_options session)
    : conn_(std::move(database_url), session) {}

result<std::vector<due_original>> pg_retention_repository::due_originals(const retention_days& r,
                                                                         int limit) {
  if (auto ok = conn_.ensure(true); !ok)
    return ok.error();
  auto res = conn_.exec(due_originals_sql, days_params(r, limit));
  if (!res)
    return res.error();
  std::vector<due_original> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int i = 0; i < res->size(); ++i)
    out.push_back(
        {pg::parse_uuid(res->text(i, 0)), pg::parse_uuid(res->text(i, 1)), res->str(i, 2)});
  return out;
}

result<void> pg_retention_repository::originals_pruned(const std::vector<uuid>& documents) {
  if (auto ok = conn_.ensure(true); !ok)
    return ok.error();
  auto res = conn_.exec(originals_pruned_sql, {pg::uuid_array(documents)});
  if (!res)
    return res.error();
  return {};
}

result<std::vector<due_derived>>
pg_retention_repository::due_derived_objects(const retention_days& r, int limit) {
  if (auto ok = conn_.ensure(true); !ok)
    return ok.error();
  auto res = conn_.exec(due_derived_sql, days_params(r, limit));
  if (!res)
    return res.error();
  std::vector<due_derived> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int i = 0; i < res->size(); ++i)
    out.push_back({pg::parse_uuid(res->text(i, 0)), pg::parse_uuid(res->text(i, 1)),
                   pg::parse_uuid(res->text(i, 2)), res->str(i, 3), res->str(i, 4)});
  return out;
}

result<void> pg_retention_repository::derived_pruned(const std::vector<uuid>& ingestions) {
  if (auto ok = conn_.ensure(true); !ok)
    return ok.error();
  auto res = conn_.exec(derived_pruned_sql, {pg::uuid_array(ingestions)});
  if (!res)
    return res.error();
  return {};
}

result<std::pair<int64_t, int64_t>> pg_retention_repository::prune_audit(const retention_days& r,
                                                                         int limit) {
  if (auto ok = conn_.ensure(true); !ok)
    return ok.error();
  auto res = conn_.exec(prune_audit_sql, days_params(r, limit));
  if (!res)
    return res.error();
  return std::pair{res->i64(0, 0), res->i64(0, 1)};
}

} // namespace ingestd
