// Erasure in the database: the plan of a document (children, ingestions, object keys, running
// work), the deletion of its rows with the DOCUMENT_ERASED event and the receipt in one
// statement, the end of a tenant's erasure, and the receipts.
#include "adapters/db/pg_erasure_repository.hpp"

#include <array>

#include <rapidjson/document.h>

#include "adapters/db/pg_values.hpp"
#include "adapters/db/pg_work.hpp"

namespace ingestd {

namespace {

using pg::param;

// The document ($1, of tenant $2 when not NULL) and its container children at any depth; the
// object keys its rows name; its ingestions; its work items a node holds now. One row per fact:
// (kind, value, tenant).
constexpr pg::statement plan_sql{"ingestd_erasure_plan", R"sql(
WITH RECURSIVE tree AS (
  SELECT d.id, d.tenant_id, 0 AS depth FROM document AS d
   WHERE d.id = $1::uuid AND ($2::uuid IS NULL OR d.tenant_id = $2::uuid)
  UNION
  SELECT c.id, c.tenant_id, t.depth + 1 FROM document AS c JOIN tree AS t ON c.parent_id = t.id
)
SELECT 'document', t.id::text, t.tenant_id::text FROM tree AS t
UNION ALL
SELECT 'ingestion', i.id::text, NULL FROM ingestion AS i WHERE i.document_id IN (SELECT id FROM tree)
UNION ALL
SELECT 'key', k.key, NULL
  FROM (SELECT d.file_path FROM document AS d WHERE d.id IN (SELECT id FROM tree)
        UNION
        SELECT i.transcription_file_path FROM ingestion AS i
         WHERE i.document_id IN (SELECT id FROM tree)
        UNION
        SELECT i.preprocessed_file_path FROM ingestion AS i
         WHERE i.document_id IN (SELECT id FROM tree)) AS k (key)
 WHERE k.key IS NOT NULL AND k.key <> ''
UNION ALL
SELECT 'running', count(*)::text, NULL FROM work_item AS w
 WHERE w.document_id IN (SELECT id FROM tree)
   AND w.claim_token IS NOT NULL AND w.lease_expires_at > now()
)sql"};

constexpr pg::statement tenant_documents_sql{"ingestd_erasure_tenant_documents", R"sql(
SELECT d.id FROM document AS d
 WHERE d.tenant_id = $1::uuid
   AND (d.parent_id IS NULL
        OR NOT EXISTS (SELECT 1 FROM document AS p WHERE p.id = d.parent_id))
 ORDER BY d.id
 LIMIT $2::integer
)sql"};

// Deletes documents $1 of tenant $2 with everything that names them. Work a node holds is left,
// which makes the document's delete fail on its reference: nothing is deleted then. Events that
// name a document in their body (a match's) go with the document's own. Then one DOCUMENT_ERASED
// event per document and, when $5, the receipt $6 (subject $7, by $3, $4 objects).
constexpr pg::statement erase_sql{"ingestd_erasure_erase", R"sql(
WITH docs AS (
  SELECT unnest($1::uuid[]) AS id
), items AS (
  SELECT w.id FROM work_item AS w WHERE w.document_id IN (SELECT id FROM docs)
), ings AS (
  SELECT i.id FROM ingestion AS i WHERE i.document_id IN (SELECT id FROM docs)
), subjects AS (
  SELECT id::text AS id FROM docs UNION SELECT id::text FROM items UNION SELECT id::text FROM ings
), del_messages AS (
  DELETE FROM queue_message AS q
   WHERE lower(btrim(q.body, E' \t\n\r\f\x0B')) IN (SELECT id FROM subjects)
  RETURNING 1
), del_audit AS (
  DELETE FROM audit_trail AS t
   WHERE t.ingestion_id IN (SELECT id FROM items UNION SELECT id FROM ings)
  RETURNING cardinality(t.steps) AS steps
), del_outbox AS (
  DELETE FROM event_outbox AS o
   WHERE o.ordering_key IN (SELECT id FROM subjects)
      OR o.body IN (SELECT id FROM subjects)
      OR o.body LIKE ANY (SELECT '%' || id || '%' FROM subjects)
  RETURNING 1
), del_matches AS (
  DELETE FROM document_match AS m
   WHERE m.document_a_id IN (SELECT id FROM docs) OR m.document_b_id IN (SELECT id FROM docs)
  RETURNING 1
), del_reviews AS (
  DELETE FROM document_review AS r WHERE r.document_id IN (SELECT id FROM docs) RETURNING 1
), del_items AS (
  DELETE FROM work_item AS w
   WHERE w.document_id IN (SELECT id FROM docs)
     AND (w.claim_token IS NULL OR w.lease_expires_at <= now())
  RETURNING 1
), del_ingestions AS (
  DELETE FROM ingestion AS i WHERE i.document_id IN (SELECT id FROM docs) RETURNING 1
), del_documents AS (
  DELETE FROM document AS d WHERE d.id IN (SELECT id FROM docs) RETURNING d.id
), counts AS (
  SELECT (SELECT count(*) FROM del_documents) AS documents,
         jsonb_build_object(
           'document', (SELECT count(*) FROM del_documents),
           'ingestion', (SELECT count(*) FROM del_ingestions),
           'work_item', (SELECT count(*) FROM del_items),
           'queue_message', (SELECT count(*) FROM del_messages),
           'ingestion_event', (SELECT COALESCE(sum(steps), 0) FROM del_audit),
           'event_outbox', (SELECT count(*) FROM del_outbox),
           'document_match', (SELECT count(*) FROM del_matches),
           'document_review', (SELECT count(*) FROM del_reviews)) AS rows
), events AS (
  SELECT count(ingestd_emit_event('DOCUMENT_ERASED', $2::uuid, d.id, NULL,
                                  jsonb_build_object('receipt_id', $6::uuid), d.id::text)) AS n
    FROM del_documents AS d
), receipt AS (
  INSERT INTO erasure_receipt (id, scope, subject_id, tenant_id, erased_by, documents, rows,
                               objects)
  SELECT $6::uuid, 'document', $7::uuid, $2::uuid, $3, c.documents, c.rows, $4::integer
    FROM counts AS c WHERE $5::boolean
  RETURNING erased_at
)
SELECT c.documents, c.rows::text,
       COALESCE((SELECT to_char(erased_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                   FROM receipt),
                to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
       (SELECT n FROM events)
  FROM counts AS c
)sql"};

// The tenant's name, credentials, batches and what its reviewers taught about its suppliers, its
// remaining events (a tenant's WARNINGs name no
// document), and the receipt with the totals.
constexpr pg::statement finish_tenant_sql{"ingestd_erasure_finish_tenant", R"sql(
WITH del_credentials AS (
  DELETE FROM tenant_credential WHERE tenant_id = $1::uuid RETURNING 1
), del_tenant AS (
  DELETE FROM tenant WHERE id = $1::uuid RETURNING 1
), del_batches AS (
  DELETE FROM batch WHERE tenant_id = $1::uuid RETURNING 1
), del_knowledge AS (
  DELETE FROM supplier_knowledge WHERE tenant_id = $1::uuid RETURNING 1
), del_outbox AS (
  DELETE FROM event_outbox AS o
   WHERE o.body LIKE '%' || $1::text || '%'
     AND NOT (o.body LIKE '%"DOCUMENT_ERASED"%')
  RETURNING 1
), counted AS (
  SELECT $5::jsonb || jsonb_build_object(
           'tenant', (SELECT count(*) FROM del_tenant),
           'tenant_credential', (SELECT count(*) FROM del_credentials),
           'batch', (SELECT count(*) FROM del_batches),
           'supplier_knowledge', (SELECT count(*) FROM del_knowledge),
           'event_outbox', COALESCE(($5::jsonb ->> 'event_outbox')::bigint, 0)
                           + (SELECT count(*) FROM del_outbox)) AS r
)
INSERT INTO erasure_receipt (id, scope, subject_id, tenant_id, erased_by, documents, rows, objects)
SELECT $2::uuid, 'tenant', $1::uuid, $1::uuid, $3, $4::integer, c.r, $6::integer
  FROM counted AS c
RETURNING to_char(erased_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), rows::text
)sql"};

constexpr pg::statement receipts_sql{"ingestd_erasure_receipts", R"sql(
SELECT id, scope, subject_id, tenant_id, erased_by,
       to_char(erased_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), documents, rows::text,
       objects
  FROM erasure_receipt
 WHERE $1::uuid IS NULL OR tenant_id = $1::uuid
 ORDER BY erased_at DESC, id
 LIMIT $2::integer
)sql"};

/// The tables of a receipt, in the order they are shown.
constexpr std::array<const char*, 10> receipt_tables{
    "document",     "ingestion",      "work_item",       "queue_message", "ingestion_event",
    "event_outbox", "document_match", "document_review", "tenant",        "tenant_credential"};

std::vector<std::pair<std::string, int64_t>> rows_of(const std::string& json) {
  std::vector<std::pair<std::string, int64_t>> out;
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  if (doc.HasParseError() || !doc.IsObject())
    return out;
  for (const char* table : receipt_tables)
    if (auto it = doc.FindMember(table); it != doc.MemberEnd() && it->value.IsInt64())
      out.emplace_back(table, it->value.GetInt64());
  return out;
}

std::string rows_json(const std::vector<std::pair<std::string, int64_t>>& rows) {
  std::string out = "{";
  for (auto& [table, n] : rows) {
    if (out.size() > 1)
      out += ',';
    out += '"' + table + "\":" + std::to_string(n);
  }
  return out + "}";
}

} // namespace

pg_erasure_repository::pg_erasure_repository(std::string database_url)
    : conn_(std::move(database_url)) {}

result<std::optional<erasure_plan>>
pg_erasure_repository::plan_document(uuid document_id, std::optional<uuid> tenant_id) {
  if (auto ok = conn_.ensure(true); !ok)
    return ok.error();
  auto res
      = conn_.exec(plan_sql, {document_id.str(), tenant_id ? param{tenant_id->str()} : param{}});
  if (!res)
    return res.error();
  erasure_plan plan;
  plan.documents.push_back(document_id);
  bool found = false;
  for (int r = 0; r < res->size(); ++r) {
    auto kind = res->str(r, 0);
    auto value = res->str(r, 1);
    if (kind == "document") {
      auto id = pg::parse_uuid(value);
      if (id == document_id) {
        found = true;
        plan.tenant_id = pg::parse_uuid(res->str(r, 2));
      } else {
        plan.documents.push_back(id);
      }
    } else if (kind == "ingestion") {
      plan.ingestions.push_back(pg::parse_uuid(value));
    } else if (kind == "key") {
      plan.object_keys.push_back(value);
    } else if (kind == "running") {
      plan.running = std::stoll(value);
    }
  }
  if (!found)
    return std::optional<erasure_plan>{};
  return std::optional<erasure_plan>{std::move(plan)};
}

result<std::vector<uuid>> pg_erasure_repository::tenant_documents(uuid tenant_id, int limit) {
  if (auto ok = conn_.ensure(true); !ok)
    return ok.error();
  auto res = conn_.exec(tenant_documents_sql, {tenant_id.str(), std::to_string(limit)});
  if (!res)
    return res.error();
  std::vector<uuid> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int r = 0; r < res->size(); ++r)
    out.push_back(pg::parse_uuid(res->str(r, 0)));
  return out;
}

result<erasure_receipt> pg_erasure_repository::erase_rows(const erasure_plan& plan,
                                                          const std::string& erased_by,
                                                          int64_t objects, bool write_receipt) {
  if (auto ok = conn_.ensure(true); !ok)
    return ok.error();
  erasure_receipt receipt;
  receipt.id = uuid::v7();
  receipt.scope = "document";
  receipt.subject_id = plan.documents.empty() ? uuid{} : plan.documents.front();
  receipt.tenant_id = plan.tenant_id;
  receipt.erased_by = erased_by;
  receipt.objects = objects;
  auto res = conn_.exec(erase_sql, {pg::uuid_array(plan.documents), plan.tenant_id.str(), erased_by,
                                    std::to_string(objects), write_receipt ? "true" : "false",
                                    receipt.id.str(), receipt.subject_id.str()});
  if (!res) {
    if (res.error().code == "pg.23503") // foreign_key_violation: a claim came first
      return error::make_transient("erase.busy",
                                   "a node took up work on the document while it was being erased; "
                                   "nothing was deleted: try again when its work has finished");
    return res.error();
  }
  receipt.documents = res->i64(0, 0);
  receipt.rows = rows_of(res->str(0, 1));
  receipt.erased_at = res->str(0, 2);
  return receipt;
}

result<erasure_receipt> pg_erasure_repository::finish_tenant(uuid tenant_id,
                                                             const std::string& erased_by,
                                                             const erasure_receipt& totals) {
  if (auto ok = conn_.ensure(true); !ok)
    return ok.error();
  erasure_receipt receipt = totals;
  receipt.id = uuid::v7();
  receipt.scope = "tenant";
  receipt.subject_id = tenant_id;
  receipt.tenant_id = tenant_id;
  receipt.erased_by = erased_by;
  auto res
      = conn_.exec(finish_tenant_sql,
                   {tenant_id.str(), receipt.id.str(), erased_by, std::to_string(totals.documents),
                    rows_json(totals.rows), std::to_string(totals.objects)});
  if (!res)
    return res.error();
  receipt.erased_at = res->str(0, 0);
  receipt.rows = rows_of(res->str(0, 1));
  return receipt;
}

result<std::vector<erasure_receipt>> pg_erasure_repository::receipts(std::optional<uuid> tenant_id,
                                                                     int limit) {
  if (auto ok = conn_.ensure(true); !ok)
    return ok.error();
  auto res = conn_.exec(receipts_sql,
                        {tenant_id ? param{tenant_id->str()} : param{}, std::to_string(limit)});
  if (!res)
    return res.error();
  std::vector<erasure_receipt> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int r = 0; r < res->size(); ++r) {
    erasure_receipt e;
    e.id = pg::parse_uuid(res->str(r, 0));
    e.scope = res->str(r, 1);
    e.subject_id = pg::parse_uuid(res->str(r, 2));
    e.tenant_id = pg::parse_uuid(res->str(r, 3));
    e.erased_by = res->str(r, 4);
    e.erased_at = res->str(r, 5);
    e.documents = res->i64(r, 6);
    e.rows = rows_of(res->str(r, 7));
    e.objects = res->i64(r, 8);
    out.push_back(std::move(e));
  }
  return out;
}

} // namespace ingestd
