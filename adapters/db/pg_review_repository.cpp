// pg_review_repository: the review desk's queue, document view and decisions as prepared
// statements on borrowed connections.
#include "adapters/db/pg_review_repository.hpp"

#include <algorithm>
#include <utility>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_values.hpp"
#include "adapters/support/blocking_call.hpp"
#include "messages/error_codes.hpp"

namespace ingestd {

namespace {

using pg::param;

// -- statements ------------------------------------------------------------------------------

// The latest ingestion of each document decides the reason: "gate" when the quality gate refused
// its extraction (completed, or failed with extraction.gate_failed), "sample" when the gate passed
// it and review.sample_rate chose it for a check, "calibration" when the gate passed it and
// review.auto_approve held it back, else "failed". Documents with an ingestion in
// progress are not actionable and left out.
constexpr pg::statement queue_sql{"ingestd_review_queue", R"sql(
SELECT r.id, r.tenant_id, r.file_name, r.reason, r.detail, r.supplier, r.total, r.currency,
       r.age, r.review_version
  FROM (SELECT d.id, d.tenant_id, d.created_at, d.review_version,
               COALESCE(l.source_metadata->>'file_name', d.file_path) AS file_name,
               CASE WHEN l.status = 'failed'
                         AND COALESCE(l.last_error, '') NOT LIKE 'extraction.gate_failed%'
                    THEN 'failed'
                    WHEN l.status = 'completed' AND l.last_error LIKE 'sampled:%' THEN 'sample'
                    WHEN l.status = 'completed' AND l.last_error LIKE 'calibration:%'
                    THEN 'calibration'
                    ELSE 'gate' END AS reason,
               COALESCE(l.last_error, '') AS detail,
               COALESCE(d.structured_data->>'supplier_name', '') AS supplier,
               COALESCE(d.structured_data->>'total', '') AS total,
               COALESCE(d.structured_data->>'currency', '') AS currency,
               floor(extract(epoch FROM now() - d.created_at))::bigint AS age
          FROM document AS d
          LEFT JOIN LATERAL (
            SELECT i.status, w.last_error, i.source_metadata
              FROM ingestion AS i LEFT JOIN work_item AS w ON w.id = i.id
             WHERE i.document_id = d.id ORDER BY i.created_at DESC, i.id DESC LIMIT 1) AS l ON true
         WHERE d.needs_human_review AND d.tenant_id = ANY ($1::uuid[])
           AND NOT EXISTS (SELECT 1 FROM ingestion AS p
                            WHERE p.document_id = d.id AND p.status = 'in-progress')) AS r
 WHERE $2 = '' OR r.reason = $2
 ORDER BY r.created_at, r.id
 LIMIT $3
)sql"};

constexpr pg::statement counts_sql{"ingestd_review_counts", R"sql(
SELECT CASE WHEN EXISTS (SELECT 1 FROM ingestion AS p
                          WHERE p.document_id = d.id AND p.status = 'in-progress') THEN 'processing'
            ELSE COALESCE((SELECT CASE WHEN i.status = 'failed'
                                   AND COALESCE(w.last_error, '') NOT LIKE 'extraction.gate_failed%'
                              THEN 'failed'
                              WHEN i.status = 'completed' AND w.last_error LIKE 'sampled:%'
                              THEN 'sample'
                              WHEN i.status = 'completed' AND w.last_error LIKE 'calibration:%'
                              THEN 'calibration'
                              ELSE 'gate' END
                    FROM ingestion AS i LEFT JOIN work_item AS w ON w.id = i.id
                   WHERE i.document_id = d.id
                   ORDER BY i.created_at DESC, i.id DESC LIMIT 1), 'gate') END AS reason,
       count(*)
  FROM document AS d
 WHERE d.needs_human_review AND d.tenant_id = ANY ($1::uuid[])
 GROUP BY 1
)sql"};

constexpr pg::statement document_sql{"ingestd_review_document", R"sql(
SELECT d.id, d.tenant_id, d.file_path, COALESCE(d.mime_type, ''),
       COALESCE(l.source_metadata->>'file_name', d.file_path),
       d.review_version, d.needs_human_review, COALESCE(d.review_status, ''),
       COALESCE(d.reviewed_by, ''), COALESCE(d.structured_data::text, ''),
       COALESCE(l.structured_data::text, ''), l.id, COALESCE(l.status, ''),
       COALESCE(l.last_error, ''), COALESCE(l.transcription_file_path, ''),
       COALESCE(l.preprocessed_file_path, ''),
       EXISTS (SELECT 1 FROM ingestion AS p WHERE p.document_id = d.id AND p.status = 'in-progress'),
       COALESCE((
         SELECT json_agg(json_build_object('ingestion_id', e.ingestion_id, 'step', e.step,
                                           'outcome', e.outcome, 'detail', e.detail,
                                           'duration_ms', e.duration_ms, 'worker_id', e.worker_id,
                                           'at', e.at) ORDER BY e.at, e.id)
           FROM ingestion_event AS e
          WHERE e.ingestion_id IN (SELECT i.id FROM ingestion AS i WHERE i.document_id = d.id)),
         '[]'::json)::text,
       COALESCE((
         SELECT json_agg(json_build_object(
                  'document_id', o.id, 'kind', m.kind, 'confidence', m.confidence,
                  'reason', m.reason, 'file_name', COALESCE(
                    (SELECT i.source_metadata->>'file_name' FROM ingestion AS i
                      WHERE i.document_id = o.id ORDER BY i.created_at DESC LIMIT 1), o.file_path))
                  ORDER BY m.confidence DESC, o.id)
           FROM document_match AS m
           JOIN document AS o ON o.id = CASE WHEN m.document_a_id = d.id THEN m.document_b_id
                                             ELSE m.document_a_id END
          WHERE m.document_a_id = d.id OR m.document_b_id = d.id), '[]'::json)::text,
       COALESCE((
         SELECT json_agg(json_build_object(
                  'document_id', o.id, 'file_name', COALESCE(
                    (SELECT i.source_metadata->>'file_name' FROM ingestion AS i
                      WHERE i.document_id = o.id ORDER BY i.created_at DESC LIMIT 1), o.file_path))
                  ORDER BY o.created_at, o.id)
           FROM document AS o
          WHERE d.cluster_id IS NOT NULL AND o.cluster_id = d.cluster_id AND o.id <> d.id),
         '[]'::json)::text,
       COALESCE((
         SELECT json_agg(json_build_object('action', r.action, 'reviewer', r.reviewer,
                                           'at', r.at, 'changes', r.changes,
                                           'warnings', r.warnings, 'reason', r.reason,
                                           'based_on_version', r.based_on_version,
                                           'ingestion_id', r.ingestion_id,
                                           'transcription_provider', r.transcription_provider,
                                           'extraction_provider', r.extraction_provider)
                  ORDER BY r.at, r.id)
           FROM document_review AS r WHERE r.document_id = d.id), '[]'::json)::text,
       COALESCE(d.cluster_id::text, ''),
       COALESCE(l.source_metadata->'metadata', '{}'::jsonb)::text
  FROM document AS d
  LEFT JOIN LATERAL (
    SELECT i.*, w.last_error FROM ingestion AS i LEFT JOIN work_item AS w ON w.id = i.id
     WHERE i.document_id = d.id
     ORDER BY i.created_at DESC, i.id DESC LIMIT 1) AS l ON true
 WHERE d.id = $1 AND d.tenant_id = ANY ($2::uuid[])
)sql"};

// One statement, so all or nothing: the document (only at the expected version and with no
// ingestion in progress), the review row, the audit event on the latest ingestion and, for a
// reprocess, the new ingestion of the same source with its work item and queue message ($14 the
// ingest queue, $15 through the outbox). Concurrent saves: the second waits for the
// first's row lock, then finds the version changed and updates nothing.
// $1 document, $2 tenant, $3 expected version, $4 action, $5 reviewed data, $6 reviewer,
// $7 changes, $8 warnings, $9 new ingestion id, $10 reason, $11 audit detail, $12 and $13 the
// transcription and extraction providers a reprocess chose (NULL: the node's configured ones),
// $16 what an approval teaches about the supplier (supplier_knowledge, review.learn).
constexpr pg::statement save_sql{"ingestd_review_save", R"sql(
WITH upd AS (
  UPDATE document AS d
     SET structured_data = CASE WHEN $4 = 'approve' THEN $5::jsonb ELSE d.structured_data END,
         needs_human_review = CASE WHEN $4 = 'reprocess' THEN d.needs_human_review ELSE false END,
         review_status = CASE $4 WHEN 'approve' THEN 'approved' WHEN 'reject' THEN 'rejected'
                                 ELSE 'reprocessing' END,
         reviewed_by = $6, reviewed_at = clock_timestamp(), updated_at = now()
    FROM document AS before
   WHERE d.id = $1 AND d.tenant_id = $2 AND d.review_version = $3 AND before.id = d.id
     AND NOT EXISTS (SELECT 1 FROM ingestion AS p
                      WHERE p.document_id = d.id AND p.status = 'in-progress')
  RETURNING d.id, d.tenant_id, d.review_version, before.structured_data AS before_data,
            d.structured_data AS after_data),
latest AS (
  SELECT i.id, i.document_id, i.doc_source_id, i.uploaded_by, i.source_metadata
    FROM ingestion AS i JOIN upd ON i.document_id = upd.id
   ORDER BY i.created_at DESC, i.id DESC LIMIT 1),
fresh AS (
  INSERT INTO ingestion (id, document_id, doc_source_id, uploaded_by, source_metadata,
                         transcription_provider, extraction_provider)
  SELECT $9::uuid, l.document_id, l.doc_source_id, l.uploaded_by,
         COALESCE(l.source_metadata, '{}'::jsonb)
           || jsonb_build_object('channel', 'review', 'requested_by', $6::text,
                                 'reprocess_of', l.id),
         $12, $13
    FROM latest AS l WHERE $4 = 'reprocess'
  RETURNING id, document_id),
work AS (
  SELECT count(*) FILTER (WHERE ingestd_add_work(f.id, 'ingest', f.document_id, $2::uuid, 50, 'small',
                                                 $14, $15::boolean, false)) AS sent
    FROM fresh AS f),
rev AS (
  INSERT INTO document_review (document_id, tenant_id, action, reviewer, based_on_version,
                               machine_data, reviewed_data, changes, warnings, reason,
                               ingestion_id, transcription_provider, extraction_provider)
  SELECT upd.id, upd.tenant_id, $4, $6, $3, upd.before_data,
         CASE WHEN $4 = 'approve' THEN upd.after_data END, $7::jsonb, $8::jsonb, $10,
         (SELECT id FROM fresh), $12, $13
    FROM upd),
ev AS (
  INSERT INTO ingestion_event (ingestion_id, step, outcome, detail, worker_id)
  SELECT l.id, 'review', $4, $11, 'review'
    FROM latest AS l),
learned AS (
  INSERT INTO supplier_knowledge AS k (tenant_id, supplier, field, value, learned_by)
  SELECT upd.tenant_id, f.supplier, f.field, f.value, $6
    FROM upd, jsonb_to_recordset($16::jsonb) AS f(supplier text, field text, value text)
   WHERE $4 = 'approve' AND f.supplier IS NOT NULL AND f.field IS NOT NULL AND f.value IS NOT NULL
  ON CONFLICT (tenant_id, supplier, field) DO UPDATE
     SET reviews = CASE WHEN k.value = EXCLUDED.value THEN k.reviews + 1 ELSE 1 END,
         value = EXCLUDED.value, learned_by = EXCLUDED.learned_by, learned_at = now())
SELECT upd.review_version, (SELECT id FROM fresh), (SELECT sent FROM work) FROM upd
)sql"};

constexpr pg::statement learned_sql{"ingestd_review_learned", R"sql(
SELECT tenant_id, supplier, field, value, reviews, learned_by,
       to_char(learned_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
  FROM supplier_knowledge WHERE tenant_id = ANY ($1::uuid[])
 ORDER BY tenant_id, supplier, field
 LIMIT 10000
)sql"};

constexpr pg::statement forget_sql{"ingestd_review_forget", R"sql(
DELETE FROM supplier_knowledge WHERE tenant_id = $1 AND supplier = $2 AND field = $3
)sql"};

// Why a save updated nothing.
constexpr pg::statement state_sql{"ingestd_review_state", R"sql(
SELECT d.review_version, COALESCE(d.review_status, ''), COALESCE(d.reviewed_by, ''),
       COALESCE(to_char(d.reviewed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), ''),
       EXISTS (SELECT 1 FROM ingestion AS p WHERE p.document_id = d.id AND p.status = 'in-progress')
  FROM document AS d WHERE d.id = $1 AND d.tenant_id = $2
)sql"};

constexpr pg::statement timeout_sql{"ingestd_review_timeout",
                                    "SELECT set_config('statement_timeout', $1, false)"};

std::string tenant_array(const std::vector<uuid>& tenants) {
  std::vector<param> ids;
  ids.reserve(tenants.size());
  for (auto& t : tenants)
    ids.emplace_back(t.str());
  return pg::array_literal(ids);
}

} // namespace

// -- connections -----------------------------------------------------------------------------

struct pg_review_repository::session {
  explicit session(const std::string& url) : conn(url, pg::session_options::tcp_only()) {}

  /// Runs `st` with the deadline `t`; a statement cancelled by it is "db.timeout".
  result<pg::rows> run(const pg::statement& st, const std::vector<param>& params, timeout t) {
    if (auto ok = conn.ensure(); !ok)
      return ok.error();
    auto ms = std::max<int64_t>(t.count(), 1);
    if (timeout_set_on != conn.connects() || timeout_ms != ms) {
      if (auto set = conn.exec(timeout_sql, {std::to_string(ms)}); !set)
        return set.error();
      timeout_set_on = conn.connects();
      timeout_ms = ms;
    }
    auto res = conn.exec(st, params);
    if (!res && res.error().code == errc::pg_query_canceled)
      return timeout_error("db.timeout", "the database", t);
    return res;
  }

  pg::connection conn;
  int64_t timeout_set_on = -1;
  int64_t timeout_ms = -1;
};

class pg_review_repository::borrowed {
public:
  explicit borrowed(pg_review_repository& owner) : owner_(owner), session_(owner.borrow()) {}
  ~borrowed() { owner_.give_back(std::move(session_)); }
  borrowed(const borrowed&) = delete;
  borrowed& operator=(const borrowed&) = delete;
  session* operator->() { return session_.get(); }

private:
  pg_review_repository& owner_;
  std::unique_ptr<session> session_;
};

pg_review_repository::pg_review_repository(std::string database_url, std::string ingest_queue,
                                           bool via_outbox)
    : database_url_(std::move(database_url)), ingest_queue_(std::move(ingest_queue)),
      via_outbox_(via_outbox) {}

pg_review_repository::~pg_review_repository() = default;

std::unique_ptr<pg_review_repository::session> pg_review_repository::borrow() {
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

void pg_review_repository::give_back(std::unique_ptr<session> s) {
  std::lock_guard guard{mtx_};
  idle_.push_back(std::move(s));
}

// -- look-ups --------------------------------------------------------------------------------

result<review_queue> pg_review_repository::queue(const review_queue_filter& filter, timeout t) {
  if (filter.tenants.empty())
    return review_queue{};
  auto tenants = tenant_array(filter.tenants);
  borrowed s{*this};
  auto items = s->run(queue_sql, {tenants, filter.reason, std::to_string(filter.limit)}, t);
  if (!items)
    return items.error();
  review_queue out;
  for (int r = 0; r < items->size(); ++r) {
    review_queue_item it;
    it.document_id = pg::parse_uuid(items->text(r, 0));
    it.tenant_id = pg::parse_uuid(items->text(r, 1));
    it.file_name = items->str(r, 2);
    it.reason = items->str(r, 3);
    it.detail = items->str(r, 4);
    it.supplier = items->str(r, 5);
    it.total = items->str(r, 6);
    it.currency = items->str(r, 7);
    it.age_seconds = items->i64(r, 8);
    it.version = items->i64(r, 9);
    out.items.push_back(std::move(it));
  }
  auto counts = s->run(counts_sql, {tenants}, t);
  if (!counts)
    return counts.error();
  for (int r = 0; r < counts->size(); ++r) {
    if (counts->text(r, 0) == "processing")
      out.processing = counts->i64(r, 1);
    else
      out.counts.emplace_back(counts->str(r, 0), counts->i64(r, 1));
  }
  return out;
}

result<std::optional<review_document>>
pg_review_repository::document(const std::vector<uuid>& tenants, uuid document_id, timeout t) {
  if (tenants.empty())
    return std::optional<review_document>{};
  borrowed s{*this};
  auto res = s->run(document_sql, {document_id.str(), tenant_array(tenants)}, t);
  if (!res)
    return res.error();
  if (res->size() == 0)
    return std::optional<review_document>{};
  auto& rows = *res;
  review_document d;
  d.id = pg::parse_uuid(rows.text(0, 0));
  d.tenant_id = pg::parse_uuid(rows.text(0, 1));
  d.file_path = rows.str(0, 2);
  d.mime_type = rows.str(0, 3);
  d.file_name = rows.str(0, 4);
  d.version = rows.i64(0, 5);
  d.needs_human_review = rows.boolean(0, 6);
  d.review_status = rows.str(0, 7);
  d.reviewed_by = rows.str(0, 8);
  d.structured_data = rows.str(0, 9);
  d.machine_data = rows.str(0, 10);
  if (!rows.is_null(0, 11))
    d.latest_ingestion_id = pg::parse_uuid(rows.text(0, 11));
  d.latest_status = rows.str(0, 12);
  d.last_error = rows.str(0, 13);
  d.transcription_file_path = rows.str(0, 14);
  d.preprocessed_file_path = rows.str(0, 15);
  d.processing = rows.boolean(0, 16);
  d.events_json = rows.str(0, 17);
  d.matches_json = rows.str(0, 18);
  d.cluster_json = rows.str(0, 19);
  d.reviews_json = rows.str(0, 20);
  d.cluster_id = rows.str(0, 21);
  d.metadata_json = rows.str(0, 22);
  return std::optional<review_document>{std::move(d)};
}

// -- decisions -------------------------------------------------------------------------------

result<review_saved> pg_review_repository::save(const review_decision& d, timeout t) {
  if (d.action != "approve" && d.action != "reject" && d.action != "reprocess")
    return error::make_permanent(errc::review_invalid, "unknown action '" + d.action + "'");
  if (d.action == "approve" && !pg::valid_json(d.reviewed_data))
    return error::make_permanent(errc::review_invalid, "the reviewed data is not valid JSON");
  if (!pg::valid_json(d.changes) || !pg::valid_json(d.warnings) || !pg::valid_json(d.learned))
    return error::make_permanent(errc::review_invalid,
                                 "changes, warnings and what was learned must be JSON");
  bool reprocess = d.action == "reprocess";
  std::string detail = "by " + d.reviewer;
  if (d.action == "approve" && d.changes != "{}")
    detail += ", changed " + d.changes;
  if (d.action == "reject")
    detail += ": " + d.reason;
  if (reprocess) {
    detail += ", new ingestion " + d.new_ingestion_id.str();
    if (!d.transcription_provider.empty())
      detail += ", transcription provider " + d.transcription_provider;
    if (!d.extraction_provider.empty())
      detail += ", extraction provider " + d.extraction_provider;
  }
  std::vector<param> params{d.document_id.str(),
                            d.tenant_id.str(),
                            std::to_string(d.expected_version),
                            d.action,
                            d.action == "approve" ? param{d.reviewed_data} : param{},
                            pg::clean(d.reviewer),
                            d.changes,
                            d.warnings,
                            d.new_ingestion_id.str(),
                            pg::opt_clean(d.reason),
                            pg::clean(detail),
                            pg::opt_clean(reprocess ? d.transcription_provider : std::string{}),
                            pg::opt_clean(reprocess ? d.extraction_provider : std::string{}),
                            ingest_queue_,
                            via_outbox_ ? "t" : "f",
                            d.action == "approve" ? d.learned : std::string{"[]"}};
  {
    borrowed s{*this};
    auto res = s->run(save_sql, params, t);
    if (!res)
      return res.error();
    if (res->size() == 1) {
      review_saved out;
      out.version = res->i64(0, 0);
      if (!res->is_null(0, 1))
        out.ingestion_id = pg::parse_uuid(res->text(0, 1));
      return out;
    }
  }
  return why_not_saved(d, t);
}

result<review_saved> pg_review_repository::why_not_saved(const review_decision& d, timeout t) {
  borrowed s{*this};
  auto res = s->run(state_sql, {d.document_id.str(), d.tenant_id.str()}, t);
  if (!res)
    return res.error();
  if (res->size() == 0)
    return error::make_permanent(errc::review_not_found, "no such document");
  auto version = res->i64(0, 0);
  if (res->boolean(0, 4))
    return error::make_permanent(errc::review_conflict,
                                 "the document is being processed again; reload it when the "
                                 "ingestion has finished");
  std::string message = "the document changed since you opened it (version "
                        + std::to_string(d.expected_version) + ", now " + std::to_string(version)
                        + ")";
  if (!res->str(0, 1).empty())
    message += ": " + res->str(0, 1) + " by " + res->str(0, 2) + " at " + res->str(0, 3) + " UTC";
  message += "; nothing was saved. Reload to see the current version.";
  return error::make_permanent(errc::review_conflict, std::move(message));
}

result<std::vector<learned_fact>> pg_review_repository::learned(const std::vector<uuid>& tenants,
                                                                timeout t) {
  borrowed s{*this};
  auto res = s->run(learned_sql, {tenant_array(tenants)}, t);
  if (!res)
    return res.error();
  std::vector<learned_fact> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int r = 0; r < res->size(); ++r)
    out.push_back(
        learned_fact{pg::parse_uuid(res->text(r, 0)),
                     supplier_fact{res->str(r, 1), res->str(r, 2), res->str(r, 3), res->i64(r, 4)},
                     res->str(r, 5), res->str(r, 6)});
  return out;
}

result<bool> pg_review_repository::forget(uuid tenant, const std::string& supplier,
                                          const std::string& field, timeout t) {
  borrowed s{*this};
  auto res = s->run(forget_sql, {tenant.str(), pg::clean(supplier), pg::clean(field)}, t);
  if (!res)
    return res.error();
  return res->affected() > 0;
}

} // namespace ingestd
