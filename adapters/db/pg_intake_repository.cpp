// pg_intake_repository: intake's per-content advisory lock, document look-up and insert-or-find,
// and the JSON and status look-ups, as prepared statements on borrowed connections (its batches:
// pg_intake_batches.cpp, its tenants: pg_intake_tenants.cpp).
#include "adapters/db/pg_intake_repository.hpp"

#include <algorithm>
#include <utility>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_intake_session.hpp"
#include "adapters/db/pg_values.hpp"
#include "adapters/support/blocking_call.hpp"
#include "messages/error_codes.hpp"

namespace ingestd {

namespace {

using pg::param;

// -- statements ------------------------------------------------------------------------------

// Session-level, so that it is held across the statements and calls of one intake; the server
// drops it if this connection dies. Two statements (not one): a statement's snapshot is
// taken before it waits for the lock and would miss what the previous holder committed.
constexpr pg::statement lock_sql{"ingestd_intake_lock",
                                 "SELECT pg_advisory_lock(hashtextextended($1 || ':' || $2, 0))"};
constexpr pg::statement unlock_sql{
    "ingestd_intake_unlock", "SELECT pg_advisory_unlock(hashtextextended($1 || ':' || $2, 0))"};

constexpr pg::statement existing_sql{"ingestd_intake_existing", R"sql(
SELECT d.id, d.file_path, COALESCE(d.mime_type, ''), live.id, live.status
  FROM document AS d
  LEFT JOIN LATERAL (
    SELECT i.id, i.status FROM ingestion AS i
     WHERE i.document_id = d.id AND i.status IN ('in-progress', 'completed')
     ORDER BY i.status = 'in-progress' DESC, i.created_at DESC, i.id DESC
     LIMIT 1) AS live ON true
 WHERE d.tenant_id = $1 AND d.content_hash = $2
)sql"};

// The content of the tenant's latest ingestion that carries the source key (migration 024's
// index); existing_sql then finds its document.
constexpr pg::statement source_key_sql{"ingestd_intake_source_key", R"sql(
SELECT d.content_hash FROM ingestion AS k JOIN document AS d ON d.id = k.document_id
 WHERE k.source_metadata ? 'source_key' AND k.source_metadata->>'source_key' = $2
   AND d.tenant_id = $1
 ORDER BY k.created_at DESC, k.id DESC
 LIMIT 1
)sql"};

constexpr pg::statement document_json_sql{"ingestd_intake_document", R"sql(
SELECT json_build_object(
  'id', d.id, 'tenant_id', d.tenant_id, 'content_hash', d.content_hash,
  'file_path', d.file_path, 'mime_type', d.mime_type, 'original_pruned_at', d.original_pruned_at,
  'state', CASE
    WHEN EXISTS (SELECT 1 FROM ingestion AS i
                  WHERE i.document_id = d.id AND i.status = 'in-progress') THEN 'processing'
    WHEN d.needs_human_review THEN 'needs_review'
    WHEN d.structured_data IS NOT NULL THEN 'ready'
    WHEN EXISTS (SELECT 1 FROM ingestion AS i
                  WHERE i.document_id = d.id AND i.status = 'skipped') THEN 'skipped'
    ELSE 'unprocessed' END,
  'needs_human_review', d.needs_human_review,
  'structured_data', d.structured_data,
  'review_status', d.review_status, 'reviewed_by', d.reviewed_by, 'reviewed_at', d.reviewed_at,
  'created_at', d.created_at, 'updated_at', d.updated_at,
  'matching_status', m.matching_status, 'matching_error', m.matching_error,
  'matching_attempts', m.matching_attempts, 'cluster_id', d.cluster_id,
  'parent_id', d.parent_id, 'member_name', d.member_name, 'container_depth', d.container_depth,
  'body_text', d.body_text, 'unpack_error', d.unpack_error,
  'children', COALESCE((
    SELECT json_agg(json_build_object(
             'id', c.id, 'member_name', c.member_name, 'mime_type', c.mime_type,
             'state', CASE
               WHEN EXISTS (SELECT 1 FROM ingestion AS i
                             WHERE i.document_id = c.id AND i.status = 'in-progress') THEN 'processing'
               WHEN c.needs_human_review THEN 'needs_review'
               WHEN c.structured_data IS NOT NULL THEN 'ready'
               ELSE 'unprocessed' END)
           ORDER BY c.created_at, c.id)
      FROM document AS c WHERE c.parent_id = d.id), '[]'::json),
  'matches', COALESCE((
    SELECT json_agg(json_build_object(
             'document_id', CASE WHEN m.document_a_id = d.id THEN m.document_b_id
                                 ELSE m.document_a_id END,
             'kind', m.kind, 'confidence', m.confidence, 'reason', m.reason,
             'created_at', m.created_at)
           ORDER BY m.confidence DESC, m.document_a_id, m.document_b_id)
      FROM document_match AS m
     WHERE m.document_a_id = d.id OR m.document_b_id = d.id), '[]'::json),
  'ingestions', COALESCE((
    SELECT json_agg(json_build_object('id', i.id, 'status', i.status,
                                      'attempt_count', w.attempt_count,
                                      'created_at', i.created_at,
                                      'completed_at', i.completed_at)
                    ORDER BY i.created_at, i.id)
      FROM ingestion AS i LEFT JOIN work_item AS w ON w.id = i.id
     WHERE i.document_id = d.id), '[]'::json))::text
  FROM document AS d LEFT JOIN document_matching AS m ON m.document_id = d.id
 WHERE d.id = $1 AND d.tenant_id = $2
)sql"};

constexpr pg::statement ingestion_json_sql{"ingestd_intake_ingestion", R"sql(
SELECT json_build_object(
  'id', i.id, 'document_id', i.document_id, 'status', i.status,
  'attempt_count', w.attempt_count,
  'uploaded_by', i.uploaded_by, 'doc_source_id', i.doc_source_id,
  'source_metadata', i.source_metadata, 'batch_id', i.batch_id,
  'last_error', w.last_error, 'error_class', w.error_class,
  'claimed_by', w.claimed_by,
  'claimed', w.claim_token IS NOT NULL AND w.lease_expires_at >= now(),
  'transcription_file_path', i.transcription_file_path,
  'preprocessed_file_path', i.preprocessed_file_path,
  'derived_pruned_at', i.derived_pruned_at, 'audit_pruned_at', i.audit_pruned_at,
  'transcription_quality_score', i.transcription_quality_score,
  'structured_data', i.structured_data,
  'valid_structured_data', i.valid_structured_data,
  'extraction_model', i.extraction_model,
  'extraction_input_tokens', i.extraction_input_tokens,
  'extraction_output_tokens', i.extraction_output_tokens,
  'created_at', i.created_at, 'started_at', w.started_at, 'completed_at', i.completed_at,
  'due_at', w.due_at, 'stage', w.stage, 'priority', w.priority, 'size_class', w.size_class,
  'events', COALESCE((
    SELECT json_agg(json_build_object('step', e.step, 'outcome', e.outcome, 'detail', e.detail,
                                      'duration_ms', e.duration_ms, 'worker_id', e.worker_id,
                                      'at', e.at)
                    ORDER BY e.at, e.id)
      FROM ingestion_event AS e WHERE e.ingestion_id = i.id), '[]'::json))::text
  FROM ingestion AS i JOIN document AS d ON d.id = i.document_id
  LEFT JOIN work_item AS w ON w.id = i.id
 WHERE i.id = $1 AND d.tenant_id = $2
)sql"};

constexpr pg::statement review_json_sql{"ingestd_intake_review", R"sql(
SELECT COALESCE(json_agg(json_build_object(
         'document_id', r.id, 'tenant_id', r.tenant_id, 'file_name', r.file_name,
         'last_error', r.last_error, 'updated_at', r.updated_at) ORDER BY r.updated_at, r.id),
       '[]'::json)::text
  FROM (SELECT d.id, d.tenant_id, d.updated_at,
               (SELECT i.source_metadata->>'file_name' FROM ingestion AS i
                 WHERE i.document_id = d.id ORDER BY i.created_at DESC LIMIT 1) AS file_name,
               (SELECT w.last_error FROM ingestion AS i JOIN work_item AS w ON w.id = i.id
                 WHERE i.document_id = d.id ORDER BY i.created_at DESC LIMIT 1) AS last_error
          FROM document AS d WHERE d.needs_human_review
         ORDER BY d.updated_at DESC, d.id DESC LIMIT $1) AS r
)sql"};

constexpr pg::statement documents_json_sql{"ingestd_intake_documents", R"sql(
SELECT COALESCE(json_agg(json_build_object(
         'document_id', r.id, 'file_name', r.file_name, 'state', r.state,
         'needs_human_review', r.needs_human_review, 'last_error', r.last_error,
         'invoice_number', r.sd->'invoice_number', 'invoice_date', r.sd->'invoice_date',
         'supplier_name', r.sd->'supplier_name', 'customer_name', r.sd->'customer_name',
         'currency', r.sd->'currency', 'total', r.sd->'total',
         'confidence', r.sd->'confidence', 'matching_status', r.matching_status,
         'cluster_id', r.cluster_id,
         'parent_id', r.parent_id, 'member_name', r.member_name) ORDER BY r.created_at, r.id), '[]'::json)::text
  FROM (SELECT d.id, d.created_at, d.needs_human_review, d.structured_data AS sd,
               m.matching_status, d.cluster_id, d.parent_id, d.member_name,
               latest.file_name, latest.last_error,
               CASE WHEN EXISTS (SELECT 1 FROM ingestion AS i
                                  WHERE i.document_id = d.id AND i.status = 'in-progress')
                      THEN 'processing'
                    WHEN d.needs_human_review THEN 'needs_review'
                    WHEN d.structured_data IS NOT NULL THEN 'ready'
                    WHEN EXISTS (SELECT 1 FROM ingestion AS i
                                  WHERE i.document_id = d.id AND i.status = 'skipped') THEN 'skipped'
                    ELSE 'unprocessed' END AS state
          FROM document AS d
          LEFT JOIN document_matching AS m ON m.document_id = d.id
          LEFT JOIN LATERAL (
            SELECT i.source_metadata->>'file_name' AS file_name, w.last_error
              FROM ingestion AS i LEFT JOIN work_item AS w ON w.id = i.id
             WHERE i.document_id = d.id
             ORDER BY i.created_at DESC LIMIT 1) AS latest ON true
         ORDER BY d.created_at DESC, d.id DESC LIMIT $1) AS r
)sql"};

constexpr pg::statement ping_sql{"ingestd_intake_ping", "SELECT 1"};

// Cancellation, in one statement with its audit events: a queued ingestion (nobody holds a live
// lease) is cancelled at once (its work item's trigger moves the ingestion and writes the event);
// a running one gets a cancel request that its worker's heartbeat reports to its job. A container
// cascades: the ingestions of its child documents (and theirs, nested containers' children) that
// are not finished are cancelled the same way, queued ones at once, running ones by request; its
// own running unpack adds no child once the request is written (pg_container_repository). Every
// row is locked in id order. Answers the target's status before, whether a worker held it, what
// was done to it and to its children; no row: unknown (or another tenant's).
constexpr pg::statement cancel_sql{"ingestd_cancel_ingestion", R"sql(
WITH RECURSIVE target AS (
  SELECT w.id, w.document_id
    FROM work_item AS w JOIN ingestion AS i ON i.id = w.id
   WHERE w.id = $1 AND ($2::uuid IS NULL OR w.tenant_id = $2::uuid)
), tree (document_id) AS (
  SELECT d.id FROM document AS d JOIN target AS t ON d.parent_id = t.document_id
  UNION
  SELECT d.id FROM document AS d JOIN tree ON d.parent_id = tree.document_id
), locked AS (
  SELECT w.id, w.status, (w.claim_token IS NOT NULL AND w.lease_expires_at >= now()) AS held
    FROM work_item AS w
   WHERE w.id IN (SELECT id FROM target)
      OR (w.document_id IN (SELECT document_id FROM tree) AND w.stage IN ('ingest', 'unpack')
          AND w.status = 'in-progress')
   ORDER BY w.id
     FOR UPDATE OF w
), queued AS (
  UPDATE work_item AS w
     SET status = 'cancelled', completed_at = now(), cancel_requested_at = now(),
         claim_token = NULL, lease_expires_at = NULL, last_error = 'cancelled'
    FROM locked AS l
   WHERE w.id = l.id AND l.status = 'in-progress' AND NOT l.held
  RETURNING w.id
), running AS (
  UPDATE work_item AS w SET cancel_requested_at = COALESCE(w.cancel_requested_at, now())
    FROM locked AS l
   WHERE w.id = l.id AND l.status = 'in-progress' AND l.held
  RETURNING w.id
), event AS (
  INSERT INTO ingestion_event (ingestion_id, step, outcome, detail, worker_id)
  SELECT q.id, 'cancel', 'cancelled',
         CASE WHEN q.id = t.id THEN 'cancelled while queued'
              ELSE 'cancelled while queued, with its container ' || t.id::text END, $3
    FROM queued AS q CROSS JOIN target AS t
  UNION ALL
  SELECT r.id, 'cancel', 'requested',
         CASE WHEN r.id = t.id THEN 'cancel requested while running: it stops at its next step'
              ELSE 'cancel requested while running, with its container ' || t.id::text END, $3
    FROM running AS r CROSS JOIN target AS t
)
SELECT l.status, EXISTS (SELECT 1 FROM queued AS q WHERE q.id = t.id),
       EXISTS (SELECT 1 FROM running AS r WHERE r.id = t.id),
       (SELECT count(*) FROM queued AS q WHERE q.id <> t.id),
       (SELECT count(*) FROM running AS r WHERE r.id <> t.id)
  FROM target AS t JOIN locked AS l ON l.id = t.id
)sql"};

// Retry: the failed items asked for ($1 ids or NULL: all; $2 stage; $3 failed since), locked,
// oldest failure first, at most $8. Each whose stage label ("ingest", "ingest.large", "unpack",
// "match") has a queue in ($4 labels, $5 queues) is reopened by ingestd_add_work (in progress, no
// attempts or claim, a new message; its trigger moves the ingestion back to in progress), with
// an audit row and a RETRY_REQUESTED event in the same transaction. An ingestion id names its
// own item and its document's matching; a document id every item of the document. A redrive
// ($9) takes the ids' items whatever their status: an item in progress gets a new message
// only (ingestd_send), a finished one nothing; the audit step and the event's "via" are $10.
constexpr pg::statement retry_sql{"ingestd_retry_failed", R"sql(
WITH picked AS (
  SELECT w.id, w.stage, w.document_id, w.tenant_id, w.priority, w.size_class, w.attempt_count,
         w.last_error, w.completed_at, w.status
    FROM work_item AS w
   WHERE (w.status = 'failed' OR $9::boolean)
     AND ($1::uuid[] IS NULL OR w.id = ANY ($1::uuid[])
          OR (NOT $9::boolean
              AND (w.document_id = ANY ($1::uuid[])
                   OR (w.stage = 'match'
                       AND w.document_id IN (SELECT i.document_id FROM ingestion AS i
                                              WHERE i.id = ANY ($1::uuid[]))))))
     AND ($2::text IS NULL OR w.stage = $2::text)
     AND ($3::timestamptz IS NULL OR w.completed_at >= $3::timestamptz)
     AND ($11::uuid IS NULL OR w.tenant_id = $11::uuid)
   ORDER BY w.completed_at NULLS LAST, w.id
   LIMIT $8::integer
     FOR UPDATE OF w
), routed AS (
  SELECT p.*, q.queue
    FROM picked AS p
    LEFT JOIN unnest($4::text[], $5::text[]) AS q (label, queue)
      ON q.label = p.stage || CASE WHEN p.size_class = 'large' THEN '.large' ELSE '' END
), sent AS (
  SELECT r.*,
         CASE WHEN r.queue IS NULL THEN false
              WHEN r.status = 'failed'
                THEN ingestd_add_work(r.id, r.stage, r.document_id, r.tenant_id, r.priority,
                                      r.size_class, r.queue, $6::boolean, true)
              WHEN r.status = 'in-progress'
                THEN ingestd_send(r.queue, r.id::text, r.priority, $6::boolean, r.tenant_id) > 0
              ELSE false END AS sent
    FROM routed AS r
), audit AS (
  INSERT INTO ingestion_event (ingestion_id, step, outcome, detail, worker_id)
  SELECT s.id, $10::text, 'requested',
         CASE WHEN s.status = 'failed'
              THEN 'stage ' || s.stage || ' again after ' || s.attempt_count
                   || ' attempt(s); it failed with: '
                   || left(COALESCE(s.last_error, 'no error recorded'), 500)
              ELSE 'stage ' || s.stage || ' in progress: its message sent again' END,
         $7::text
    FROM sent AS s WHERE s.sent
  RETURNING ingestion_id
), events AS (
  SELECT ingestd_emit_event('RETRY_REQUESTED', s.tenant_id, s.document_id,
                            CASE WHEN s.stage <> 'match' THEN s.id END,
                            jsonb_build_object('stage', s.stage, 'attempts', s.attempt_count,
                                               'error', left(s.last_error, 500), 'by', $7::text,
                                               'via', $10::text),
                            s.document_id::text)
    FROM sent AS s WHERE s.sent
)
SELECT s.id, s.stage, s.document_id, s.sent, COALESCE(s.last_error, ''), s.status,
       (SELECT count(*) FROM events) + (SELECT count(*) FROM audit)
  FROM sent AS s
 ORDER BY s.completed_at NULLS LAST, s.id
)sql"};

// Intake: insert-or-find the document by (tenant_id, content_hash) and add an ingestion with its
// work item and queue message (ingestd_add_work: a Postgres queue row, or an outbox row for the
// relay). A concurrent intake of the same content may commit between the insert and the read:
// then no row comes back and the caller runs the statement again (it sees the committed
// document).
constexpr pg::statement intake_sql{"ingestd_create_ingestion", R"sql(
WITH new_doc AS (
  INSERT INTO document (id, tenant_id, content_hash, file_path, mime_type, content_md5)
  VALUES ($1, $2, $3, $4, $5, $11)
  ON CONFLICT (tenant_id, content_hash) DO NOTHING
  RETURNING id, file_path
), doc AS (
  SELECT id, file_path, true AS created FROM new_doc
  UNION ALL
  SELECT d.id, d.file_path, false FROM document AS d
   WHERE d.tenant_id = $2 AND d.content_hash = $3 AND NOT EXISTS (SELECT 1 FROM new_doc)
), restored AS (
  -- A document submitted again after retention pruned its original: intake stored it again.
  UPDATE document SET original_pruned_at = NULL
   WHERE tenant_id = $2 AND content_hash = $3 AND original_pruned_at IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM new_doc)
), new_ing AS (
  INSERT INTO ingestion (id, document_id, doc_source_id, uploaded_by, source_metadata, batch_id)
  SELECT $6, doc.id, $7, $8, $9::jsonb, $16::uuid FROM doc
  ON CONFLICT (id) DO NOTHING
  RETURNING id, document_id
), work AS (
  SELECT count(*) FILTER (WHERE ingestd_add_work(n.id, $10, n.document_id, $2::uuid, $12::integer, $13,
                                                 $14, $15::boolean, false)) AS sent
    FROM new_ing AS n
)
SELECT COALESCE((SELECT document_id FROM new_ing),
                (SELECT document_id FROM ingestion WHERE id = $6), doc.id),
       doc.file_path, doc.created, EXISTS (SELECT 1 FROM new_ing), (SELECT sent FROM work)
  FROM doc
)sql"};

constexpr pg::statement find_sql{"ingestd_find_ingestion", R"sql(
SELECT i.id, i.document_id, i.status, COALESCE(w.attempt_count, 0), w.last_error, w.error_class,
       w.claimed_by, COALESCE(w.claim_token IS NOT NULL AND w.lease_expires_at >= now(), false),
       d.needs_human_review, d.structured_data::text
  FROM ingestion AS i JOIN document AS d ON d.id = i.document_id
  LEFT JOIN work_item AS w ON w.id = i.id
 WHERE i.id = $1
)sql"};

constexpr pg::statement summary_sql{"ingestd_summarize", R"sql(
SELECT 'status' AS kind, status AS key, count(*) AS n FROM ingestion GROUP BY status
UNION ALL
SELECT 'class', COALESCE(error_class, ''), count(*) FROM work_item
 WHERE stage <> 'match' AND status = 'failed' GROUP BY error_class
UNION ALL
SELECT 'oldest', '', COALESCE(floor(extract(epoch FROM now() - min(created_at))), 0)::bigint
  FROM ingestion WHERE status = 'in-progress'
UNION ALL
SELECT 'skip', skip_reason, count(*) FROM ingestion WHERE status = 'skipped' GROUP BY skip_reason
UNION ALL
SELECT 'review', '', count(*) FROM document WHERE needs_human_review
UNION ALL
SELECT 'matching', matching_status, count(*) FROM document_matching GROUP BY matching_status
UNION ALL
SELECT 'matching_stuck', '', count(*) FROM document_matching
 WHERE matching_status = 'in-progress' AND matching_started_at < now() - interval '10 minutes'
UNION ALL
SELECT 'matching_oldest', '',
       COALESCE(floor(extract(epoch FROM now() - min(matching_started_at))), 0)::bigint
  FROM document_matching WHERE matching_status = 'in-progress'
UNION ALL
SELECT 'recent', CASE WHEN i.valid_structured_data OR w.last_error LIKE 'sampled:%'
                      THEN 'through' ELSE 'person' END, count(*)
  FROM ingestion AS i LEFT JOIN work_item AS w ON w.id = i.id
 WHERE i.status = 'completed' AND i.completed_at > now() - interval '30 days'
 GROUP BY 2
UNION ALL
SELECT 'sample', COALESCE(v.verdict, 'waiting'), count(*)
  FROM ingestion AS i JOIN work_item AS w ON w.id = i.id
  LEFT JOIN LATERAL (
    SELECT CASE WHEN r.action = 'approve' AND r.changes = '{}'::jsonb THEN 'right'
                ELSE 'wrong' END AS verdict
      FROM document_review AS r
     WHERE r.document_id = i.document_id AND r.at >= i.completed_at
     ORDER BY r.at, r.id LIMIT 1) AS v ON true
 WHERE i.status = 'completed' AND i.completed_at > now() - interval '30 days'
   AND w.last_error LIKE 'sampled:%'
 GROUP BY 2
)sql"};

// The matching part of the summary alone, for every scrape of /metrics.
constexpr pg::statement matching_summary_sql{"ingestd_summarize_matching", R"sql(
SELECT 'matching' AS kind, matching_status AS key, count(*) AS n FROM document_matching
 GROUP BY matching_status
UNION ALL
SELECT 'matching_stuck', '', count(*) FROM document_matching
 WHERE matching_status = 'in-progress' AND matching_started_at < now() - interval '10 minutes'
UNION ALL
SELECT 'matching_oldest', '',
       COALESCE(floor(extract(epoch FROM now() - min(matching_started_at))), 0)::bigint
  FROM document_matching WHERE matching_status = 'in-progress'
)sql"};

// Each document's file name (its latest ingestion's), matching status and cluster, for
// `ingestd matches`.
constexpr pg::statement labels_sql{"ingestd_intake_labels", R"sql(
SELECT d.id,
       COALESCE((SELECT i.source_metadata->>'file_name' FROM ingestion AS i
                  WHERE i.document_id = d.id ORDER BY i.created_at DESC, i.id DESC LIMIT 1),
                d.file_path),
       COALESCE(m.matching_status, ''), COALESCE(d.cluster_id::text, '')
  FROM document AS d LEFT JOIN document_matching AS m ON m.document_id = d.id
 WHERE d.id = ANY ($1::uuid[])
)sql"};

/// The document a known-document statement answered, if any.
result<std::optional<known_document>> known_document_of(const result<pg::rows>& res) {
  if (!res)
    return res.error();
  const auto& rows = *res;
  if (rows.size() == 0)
    return std::optional<known_document>{};
  known_document d;
  d.document_id = pg::parse_uuid(rows.text(0, 0));
  d.file_path = rows.str(0, 1);
  d.mime_type = rows.str(0, 2);
  if (!rows.is_null(0, 3)) {
    d.live_ingestion_id = pg::parse_uuid(rows.text(0, 3));
    d.live_ingestion_status = rows.str(0, 4);
  }
  return std::optional<known_document>{std::move(d)};
}

} // namespace

// -- connections -----------------------------------------------------------------------------

pg_intake_repository::pg_intake_repository(std::string database_url, bool via_outbox)
    : database_url_(std::move(database_url)), via_outbox_(via_outbox) {}

pg_intake_repository::~pg_intake_repository() = default;

std::unique_ptr<pg_intake_repository::session> pg_intake_repository::borrow() {
  {
    std::lock_guard guard{mtx_};
    if (!idle_.empty()) {
      auto s = std::move(idle_.back());
      idle_.pop_back();
      return s;
    }
  }
  return std::make_unique<session>(database_url_);
}

void pg_intake_repository::give_back(std::unique_ptr<session> s) {
  std::lock_guard guard{mtx_};
  idle_.push_back(std::move(s));
}

// -- the content lock ------------------------------------------------------------------------

/// A session holding the advisory lock of one (tenant, content hash) until destroyed.
class pg_intake_repository::pg_content_lock final : public content_lock {
public:
  pg_content_lock(pg_intake_repository& owner, std::unique_ptr<session> s, std::string tenant,
                  std::string hash)
      : owner_(owner), session_(std::move(s)), tenant_(std::move(tenant)), hash_(std::move(hash)) {}

  ~pg_content_lock() override {
    if (!session_->run(unlock_sql, {tenant_, hash_}, timeout{session_->timeout_ms}))
      session_->conn.drop(); // the server releases a dead session's locks
    owner_.give_back(std::move(session_));
  }

  result<std::optional<known_document>> find_document(timeout t) override {
    return known_document_of(session_->run(existing_sql, {tenant_, hash_}, t));
  }

private:
  pg_intake_repository& owner_;
  std::unique_ptr<session> session_;
  std::string tenant_;
  std::string hash_;
};

result<std::unique_ptr<intake_repository::content_lock>>
pg_intake_repository::lock_content(uuid tenant_id, const std::string& content_hash, timeout t) {
  auto s = borrow();
  auto tenant = tenant_id.str();
  if (auto res = s->run(lock_sql, {tenant, content_hash}, t, true); !res) {
    // A lock statement cancelled at its deadline may have taken the lock all the same: ending
    // the session releases it.
    s->conn.drop();
    give_back(std::move(s));
    return res.error();
  }
  return std::unique_ptr<content_lock>{
      std::make_unique<pg_content_lock>(*this, std::move(s), std::move(tenant), content_hash)};
}

result<std::optional<known_document>>
pg_intake_repository::find_by_source_key(uuid tenant_id, const std::string& source_key, timeout t) {
  borrowed s{*this};
  auto tenant = tenant_id.str();
  auto hash = s->run(source_key_sql, {tenant, pg::clean(source_key)}, t);
  if (!hash)
    return hash.error();
  if (hash->size() == 0)
    return std::optional<known_document>{};
  return known_document_of(s->run(existing_sql, {tenant, hash->str(0, 0)}, t));
}

// -- writes and look-ups ---------------------------------------------------------------------

result<intake_result> pg_intake_repository::create_ingestion(const intake_request& request,
                                                             timeout t) {
  if (request.doc_source_id.has_value() == request.uploaded_by.has_value())
    return error::make_permanent("pg.invalid_intake",
                                 "exactly one of doc_source_id and uploaded_by must be set");
  if (request.content_hash.empty() || request.file_path.empty())
    return error::make_permanent("pg.invalid_intake",
                                 "content_hash and file_path must not be empty");
  if (!request.source_metadata.empty() && !pg::valid_json(request.source_metadata))
    return error::make_permanent("pg.invalid_json", "source_metadata is not valid JSON");
  std::vector<param> params{request.document_id.str(),
                            request.tenant_id.str(),
                            request.content_hash,
                            request.file_path,
                            pg::opt_text(request.mime_type),
                            request.ingestion_id.str(),
                            request.doc_source_id ? param{request.doc_source_id->str()} : param{},
                            request.uploaded_by ? param{request.uploaded_by->str()} : param{},
                            pg::opt_text(request.source_metadata),
                            request.stage.empty() ? std::string{"ingest"} : request.stage,
                            pg::opt_text(request.content_md5),
                            std::to_string(request.priority),
                            request.size_class == "large" ? std::string{"large"}
                                                          : std::string{"small"},
                            request.queue,
                            via_outbox_ ? "t" : "f",
                            request.batch_id ? param{request.batch_id->str()} : param{}};
  borrowed s{*this};
  // Two tries: the second sees a document that a concurrent intake committed meanwhile.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto res = s->run(intake_sql, params, t);
    if (!res)
      return res.error();
    if (res->size() == 0)
      continue;
    intake_result out;
    out.document_id = pg::parse_uuid(res->text(0, 0));
    out.ingestion_id = request.ingestion_id;
    out.file_path = res->str(0, 1);
    out.document_created = res->boolean(0, 2);
    out.ingestion_created = res->boolean(0, 3);
    return out;
  }
  return error::make_transient("pg.intake_race",
                               "the document was neither inserted nor found; retry");
}

result<std::optional<std::string>> pg_intake_repository::json_query(const pg::statement& st,
                                                                    std::vector<std::string> params,
                                                                    timeout t) {
  borrowed s{*this};
  auto res = s->run(st, {params.begin(), params.end()}, t);
  if (!res)
    return res.error();
  if (res->size() == 0 || res->is_null(0, 0))
    return std::optional<std::string>{};
  return std::optional<std::string>{res->str(0, 0)};
}

result<std::optional<std::string>>
pg_intake_repository::document_json(uuid tenant_id, uuid document_id, timeout t) {
  return json_query(document_json_sql, {document_id.str(), tenant_id.str()}, t);
}

result<std::optional<std::string>>
pg_intake_repository::ingestion_json(uuid tenant_id, uuid ingestion_id, timeout t) {
  return json_query(ingestion_json_sql, {ingestion_id.str(), tenant_id.str()}, t);
}

result<std::string> pg_intake_repository::review_json(int limit, timeout t) {
  auto r = json_query(review_json_sql, {std::to_string(limit)}, t);
  if (!r)
    return r.error();
  return r->value_or("[]");
}

result<std::string> pg_intake_repository::documents_json(int limit, timeout t) {
  auto r = json_query(documents_json_sql, {std::to_string(limit)}, t);
  if (!r)
    return r.error();
  return r->value_or("[]");
}

result<std::optional<ingestion_status>> pg_intake_repository::find_ingestion(uuid ingestion_id,
                                                                             timeout t) {
  borrowed s{*this};
  auto res = s->run(find_sql, {ingestion_id.str()}, t);
  if (!res)
    return res.error();
  if (res->size() == 0)
    return std::optional<ingestion_status>{};
  auto& rows = *res;
  ingestion_status st;
  st.ingestion_id = pg::parse_uuid(rows.text(0, 0));
  st.document_id = pg::parse_uuid(rows.text(0, 1));
  st.status = rows.str(0, 2);
  st.attempt_count = static_cast<int32_t>(rows.i64(0, 3));
  st.last_error = rows.str(0, 4);
  st.error_class = rows.str(0, 5);
  st.claimed_by = rows.str(0, 6);
  st.claimed = rows.boolean(0, 7);
  st.needs_human_review = rows.boolean(0, 8);
  st.document_structured_data = rows.str(0, 9);
  return std::optional<ingestion_status>{std::move(st)};
}

result<status_summary> pg_intake_repository::summarize(timeout t) {
  return summary_of(summary_sql, t);
}

result<status_summary> pg_intake_repository::summarize_matching(timeout t) {
  return summary_of(matching_summary_sql, t);
}

result<status_summary> pg_intake_repository::summary_of(const pg::statement& st, timeout t) {
  borrowed s{*this};
  auto res = s->run(st, {}, t);
  if (!res)
    return res.error();
  status_summary out;
  for (int r = 0; r < res->size(); ++r) {
    auto kind = res->text(r, 0);
    auto key = res->str(r, 1);
    auto n = res->i64(r, 2);
    if (kind == "status") {
      if (key == "in-progress")
        out.in_progress = n;
      else if (key == "completed")
        out.completed = n;
      else if (key == "failed")
        out.failed = n;
      else if (key == "skipped")
        out.skipped = n;
      else if (key == "cancelled")
        out.cancelled = n;
    } else if (kind == "skip") {
      out.skipped_by_reason.emplace_back(key, n);
    } else if (kind == "class") {
      out.failures_by_error_class.emplace_back(key, n);
    } else if (kind == "oldest") {
      out.oldest_in_progress_seconds = n;
    } else if (kind == "review") {
      out.documents_needing_review = n;
    } else if (kind == "matching") {
      out.matching_by_status.emplace_back(key, n);
    } else if (kind == "matching_stuck") {
      out.matching_in_progress_over_10_minutes = n;
    } else if (kind == "matching_oldest") {
      out.oldest_matching_in_progress_seconds = n;
    } else if (kind == "recent") {
      out.completed_30_days += n;
      if (key == "through")
        out.straight_through_30_days = n;
    } else if (kind == "sample") {
      (key == "right"   ? out.sampled_right
       : key == "wrong" ? out.sampled_wrong
                        : out.sampled_waiting)
          = n;
    }
  }
  return out;
}

result<std::vector<document_label>>
pg_intake_repository::document_labels(const std::vector<uuid>& document_ids, timeout t) {
  std::vector<param> ids;
  ids.reserve(document_ids.size());
  for (auto& id : document_ids)
    ids.emplace_back(id.str());
  borrowed s{*this};
  auto res = s->run(labels_sql, {pg::array_literal(ids)}, t);
  if (!res)
    return res.error();
  std::vector<document_label> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int r = 0; r < res->size(); ++r)
    out.push_back(document_label{pg::parse_uuid(res->text(r, 0)), res->str(r, 1), res->str(r, 2),
                                 res->str(r, 3)});
  return out;
}

result<cancel_result> pg_intake_repository::cancel_ingestion(uuid ingestion_id,
                                                             std::optional<uuid> tenant_id,
                                                             const std::string& who, timeout t) {
  borrowed s{*this};
  auto res = s->run(
      cancel_sql,
      {ingestion_id.str(), tenant_id ? param{tenant_id->str()} : param{}, pg::opt_clean(who)}, t);
  if (!res)
    return res.error();
  cancel_result out;
  if (res->size() == 0)
    return out; // not_found
  out.status = res->str(0, 0);
  out.children_cancelled = res->i64(0, 3);
  out.children_cancelling = res->i64(0, 4);
  if (res->boolean(0, 1))
    out.outcome = cancel_outcome::cancelled;
  else if (res->boolean(0, 2))
    out.outcome = cancel_outcome::cancelling;
  else if (out.status == "cancelled")
    out.outcome = cancel_outcome::already_cancelled;
  else
    out.outcome = cancel_outcome::finished;
  return out;
}

result<std::vector<retried_item>> pg_intake_repository::retry_failed(const retry_request& request,
                                                                     timeout t) {
  std::vector<param> ids;
  ids.reserve(request.ids.size());
  for (const auto& id : request.ids)
    ids.emplace_back(id.str());
  std::vector<param> labels;
  std::vector<param> queues;
  for (const auto& [label, queue] : request.queues) {
    labels.emplace_back(label);
    queues.emplace_back(queue);
  }
  borrowed s{*this};
  auto res
      = s->run(retry_sql,
               {ids.empty() ? param{} : param{pg::array_literal(ids)},
                request.stage.empty() ? param{} : param{request.stage},
                request.since.empty() ? param{} : param{request.since}, pg::array_literal(labels),
                pg::array_literal(queues), request.via_outbox ? "true" : "false",
                pg::opt_clean(request.who), std::to_string(request.limit),
                request.redrive ? "true" : "false", request.redrive ? "redrive" : "retry",
                request.tenant ? param{request.tenant->str()} : param{}},
               t);
  if (!res)
    return res.error();
  std::vector<retried_item> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int r = 0; r < res->size(); ++r)
    out.push_back(retried_item{pg::parse_uuid(res->text(r, 0)), res->str(r, 1),
                               pg::parse_uuid(res->text(r, 2)), res->boolean(r, 3), res->str(r, 4),
                               res->str(r, 5)});
  return out;
}

result<void> pg_intake_repository::ping(timeout t) {
  borrowed s{*this};
  if (auto res = s->run(ping_sql, {}, t); !res)
    return res.error();
  return {};
}

} // namespace ingestd
