// pg_intake_repository's tenants: the HTTP intake's tenants with their token hashes (added,
// listed, rotated, looked up by a token), each tenant's work in progress, and the usage per
// tenant and month.
#include <utility>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_intake_session.hpp"
#include "adapters/db/pg_values.hpp"

namespace ingestd {

namespace {

using pg::param;

// ON CONFLICT on either key (id, name): nothing is inserted and no row comes back.
constexpr pg::statement add_tenant_sql{"ingestd_tenant_add", R"sql(
WITH t AS (
  INSERT INTO tenant (id, name) VALUES ($1, $2) ON CONFLICT DO NOTHING
  RETURNING id, name, created_at),
c AS (
  INSERT INTO tenant_credential (token_sha256, tenant_id) SELECT $3, id FROM t
  RETURNING created_at)
SELECT t.id, t.name, to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 1,
       (SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') FROM c)
  FROM t
)sql"};

constexpr pg::statement tenants_sql{"ingestd_tenants", R"sql(
SELECT t.id, t.name, to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       count(c.token_sha256) FILTER (WHERE c.revoked_at IS NULL),
       to_char(max(c.created_at) FILTER (WHERE c.revoked_at IS NULL) AT TIME ZONE 'UTC',
               'YYYY-MM-DD"T"HH24:MI:SS"Z"')
  FROM tenant AS t LEFT JOIN tenant_credential AS c ON c.tenant_id = t.id
 GROUP BY t.id ORDER BY t.name
)sql"};

// The tenant's row is locked, so two rotations of one tenant leave one active token.
constexpr pg::statement rotate_tenant_sql{"ingestd_tenant_rotate", R"sql(
WITH t AS (
  SELECT id, name, created_at FROM tenant WHERE id = $1 OR ($1 IS NULL AND name = $2)
  FOR UPDATE),
revoked AS (
  UPDATE tenant_credential SET revoked_at = now()
   WHERE tenant_id IN (SELECT id FROM t) AND revoked_at IS NULL),
c AS (
  INSERT INTO tenant_credential (token_sha256, tenant_id) SELECT $3, id FROM t
  RETURNING created_at)
SELECT t.id, t.name, to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 1,
       (SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') FROM c)
  FROM t
)sql"};

// Over the open work items only (work_item_open_idx's rows).
constexpr pg::statement tenant_work_sql{"ingestd_tenant_work", R"sql(
SELECT tenant_id, stage,
       count(*) FILTER (WHERE claim_token IS NULL OR lease_expires_at <= now()),
       count(*) FILTER (WHERE claim_token IS NOT NULL AND lease_expires_at > now())
  FROM work_item WHERE status = 'in-progress'
 GROUP BY tenant_id, stage
 ORDER BY count(*) DESC, tenant_id, stage
 LIMIT $1
)sql"};

constexpr pg::statement usage_sql{"ingestd_usage", R"sql(
SELECT d.tenant_id, COALESCE(t.name, ''),
       to_char(date_trunc('month', i.created_at AT TIME ZONE 'UTC'), 'YYYY-MM'),
       count(*), count(*) FILTER (WHERE i.status = 'completed'),
       COALESCE(sum(i.extraction_input_tokens), 0), COALESCE(sum(i.extraction_output_tokens), 0),
       COALESCE(sum(i.transcribed_pages) FILTER (WHERE i.transcribed_by = 'document_ai'), 0),
       COALESCE(sum(i.transcribed_pages) FILTER (WHERE i.transcribed_by <> 'document_ai'), 0)
  FROM ingestion AS i
  JOIN document AS d ON d.id = i.document_id
  LEFT JOIN tenant AS t ON t.id = d.tenant_id
 WHERE ($1::uuid IS NULL OR d.tenant_id = $1::uuid)
   AND ($2::timestamptz IS NULL OR i.created_at >= $2::timestamptz)
 GROUP BY 1, 2, 3
 ORDER BY 3, 2, 1
)sql"};

constexpr pg::statement tenant_of_token_sql{
    "ingestd_tenant_of_token",
    "SELECT tenant_id FROM tenant_credential WHERE token_sha256 = $1 AND revoked_at IS NULL"};

constexpr pg::statement any_tenant_token_sql{
    "ingestd_any_tenant_token",
    "SELECT EXISTS (SELECT 1 FROM tenant_credential WHERE revoked_at IS NULL)"};

tenant_record tenant_of_row(const pg::rows& rows, int row) {
  tenant_record t;
  t.id = pg::parse_uuid(rows.text(row, 0));
  t.name = rows.str(row, 1);
  t.created_at = rows.str(row, 2);
  t.active_tokens = rows.i64(row, 3);
  t.token_created_at = rows.str(row, 4);
  return t;
}

} // namespace

result<std::optional<tenant_record>>
pg_intake_repository::add_tenant(uuid id, const std::string& name, const std::string& token_sha256,
                                 timeout t) {
  borrowed s{*this};
  auto res = s->run(add_tenant_sql, {id.str(), name, token_sha256}, t);
  if (!res)
    return res.error();
  if (res->size() == 0)
    return std::optional<tenant_record>{};
  return std::optional<tenant_record>{tenant_of_row(*res, 0)};
}

result<std::vector<tenant_record>> pg_intake_repository::tenants(timeout t) {
  borrowed s{*this};
  auto res = s->run(tenants_sql, {}, t);
  if (!res)
    return res.error();
  std::vector<tenant_record> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int i = 0; i < res->size(); ++i)
    out.push_back(tenant_of_row(*res, i));
  return out;
}

result<std::optional<tenant_record>>
pg_intake_repository::rotate_tenant_token(std::optional<uuid> id, const std::string& name,
                                          const std::string& token_sha256, timeout t) {
  borrowed s{*this};
  auto res = s->run(rotate_tenant_sql, {id ? param{id->str()} : param{}, name, token_sha256}, t);
  if (!res)
    return res.error();
  if (res->size() == 0)
    return std::optional<tenant_record>{};
  return std::optional<tenant_record>{tenant_of_row(*res, 0)};
}

result<std::optional<uuid>> pg_intake_repository::tenant_of_token(const std::string& token_sha256,
                                                                  timeout t) {
  borrowed s{*this};
  auto res = s->run(tenant_of_token_sql, {token_sha256}, t);
  if (!res)
    return res.error();
  if (res->size() == 0)
    return std::optional<uuid>{};
  return std::optional<uuid>{pg::parse_uuid(res->text(0, 0))};
}

result<std::vector<tenant_work>> pg_intake_repository::tenant_work_figures(int limit, timeout t) {
  borrowed s{*this};
  auto res = s->run(tenant_work_sql, {std::to_string(limit)}, t);
  if (!res)
    return res.error();
  std::vector<tenant_work> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int i = 0; i < res->size(); ++i)
    out.push_back(tenant_work{pg::parse_uuid(res->text(i, 0)), res->str(i, 1), res->i64(i, 2),
                              res->i64(i, 3)});
  return out;
}

result<std::vector<usage_row>> pg_intake_repository::usage(std::optional<uuid> tenant,
                                                           const std::string& since, timeout t) {
  borrowed s{*this};
  auto res = s->run(usage_sql, {tenant ? param{tenant->str()} : param{}, pg::opt_text(since)}, t);
  if (!res)
    return res.error();
  std::vector<usage_row> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int i = 0; i < res->size(); ++i)
    out.push_back(usage_row{pg::parse_uuid(res->text(i, 0)), res->str(i, 1), res->str(i, 2),
                            res->i64(i, 3), res->i64(i, 4), res->i64(i, 5), res->i64(i, 6),
                            res->i64(i, 7), res->i64(i, 8)});
  return out;
}

result<bool> pg_intake_repository::any_tenant_token(timeout t) {
  borrowed s{*this};
  auto res = s->run(any_tenant_token_sql, {}, t);
  if (!res)
    return res.error();
  return res->size() > 0 && res->boolean(0, 0);
}

} // namespace ingestd
