// pg_matching_repository: the matching claim and its fenced writes on the document row, candidate
// retrieval, and the write phase (delete edges, insert edges, recompute clusters) in one
// transaction under the tenant's advisory lock.
#include "adapters/db/pg_matching_repository.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include <rapidjson/document.h>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_values.hpp"

namespace ingestd {

namespace {

using pg::clean;
using pg::opt_clean;
using pg::opt_text;
using pg::param;
using pg::parse_uuid;

// -- statements ------------------------------------------------------------------------------

// The ingestion's claim (pg_repository.cpp) on the document's matching columns. A pending
// document is claimed; so is an in-progress one whose lease ran out: its holder crashed (every
// deliberate end, write_matches, record_failure and release, clears the claim), and the crash's
// redelivery that reaches max_attempts ($5) deliveries fails the document instead (poison), so
// that a document that kills its worker cannot loop. Each delivery counts (matching_attempts).
// The row lock re-checks the condition after waiting for a concurrent claimer.
constexpr pg::statement claim_sql{"ingestd_match_claim", R"sql(
WITH lock AS (
  SELECT d.id,
         d.matching_status = 'in-progress' AS crashed,
         d.matching_status = 'in-progress'
           AND d.matching_attempts + 1 >= greatest($5::integer, 1) AS poison
    FROM document AS d
   WHERE d.id = $1
     AND (d.matching_status = 'pending'
          OR (d.matching_status = 'in-progress'
              AND (d.matching_lease_expires_at IS NULL OR d.matching_lease_expires_at < now())))
   FOR UPDATE OF d
), changed AS (
  UPDATE document AS d
     SET matching_attempts = d.matching_attempts + 1,
         matching_status = CASE WHEN lock.poison THEN 'failed' ELSE 'in-progress' END,
         matching_failed_at = CASE WHEN lock.poison THEN now() ELSE d.matching_failed_at END,
         matching_error = CASE WHEN lock.crashed
                               THEN CASE WHEN lock.poison THEN 'poison: ' ELSE 'worker.crash: ' END
                                    || 'the matching claim of '
                                    || coalesce(d.matching_claimed_by, 'a worker')
                                    || ' expired without an outcome or give-back (delivery '
                                    || (d.matching_attempts + 1) || ' of '
                                    || greatest($5::integer, 1) || ')'
                               ELSE d.matching_error END,
         matching_claim_token = CASE WHEN lock.poison THEN NULL ELSE $2::uuid END,
         matching_claimed_by = CASE WHEN lock.poison THEN NULL ELSE $3 END,
         matching_lease_expires_at =
           CASE WHEN lock.poison THEN NULL
                ELSE now() + make_interval(secs => $4::double precision) END,
         matching_started_at = CASE WHEN lock.poison THEN d.matching_started_at ELSE now() END,
         matching_message_seen_at = now()
    FROM lock
   WHERE d.id = lock.id
  RETURNING d.id, d.tenant_id, d.matching_attempts, d.content_hash,
            COALESCE(d.structured_data::text, '{}'), d.file_path, lock.poison
)
SELECT c.id, c.tenant_id, c.matching_attempts, c.content_hash, c.structured_data,
       COALESCE((SELECT i.source_metadata->>'file_name' FROM ingestion AS i
                  WHERE i.document_id = c.id ORDER BY i.created_at DESC, i.id DESC LIMIT 1),
                c.file_path),
       COALESCE((SELECT i.transcription_file_path FROM ingestion AS i
                  WHERE i.document_id = c.id AND i.status = 'completed'
                  ORDER BY i.completed_at DESC NULLS LAST, i.created_at DESC LIMIT 1), ''),
       c.poison
  FROM changed AS c (id, tenant_id, matching_attempts, content_hash, structured_data, file_path,
                     poison)
)sql"};

constexpr pg::statement state_sql{"ingestd_match_state", R"sql(
SELECT matching_status,
       matching_lease_expires_at IS NOT NULL AND matching_lease_expires_at >= now()
  FROM document WHERE id = $1
)sql"};

constexpr pg::statement features_sql{"ingestd_match_store_features", R"sql(
UPDATE document
   SET match_kind = $3, match_number = $4, match_counterparty = $5,
       normalized_counterparty = $6, normalized_references = $7::text[],
       match_total = $8::numeric, match_currency = $9, match_date = $10::date,
       searchable_text = $11, text_hash = $12, features_at = now()
 WHERE id = $1 AND matching_claim_token = $2 AND matching_status = 'in-progress'
)sql"};

// Candidate retrieval: one index-driven branch per signal, each bounded by the limit, scored and
// summed per document; best first. The tenant, the stored features (features_at, the partial
// indexes' predicate) and "not the document itself" hold in every branch.
//   text hash equal ............ 100  (tenant_id, text_hash)
//   numbers equal .............. 50   (tenant_id, match_number)
//   its number among my refs ... 40   (tenant_id, match_number)
//   my number among its refs ... 40   GIN normalized_references
//   references overlap ......... 30   GIN normalized_references
//   counterparty trigrams ...... 10 x similarity   GIN trigram normalized_counterparty
//   total within 1% and date within 90 days ... 5 (tenant_id, match_total)
constexpr const char* candidates_text = R"sql(
WITH hits AS (
  (SELECT d.id, 100.0::double precision AS score FROM document AS d
    WHERE $8::text IS NOT NULL AND d.tenant_id = $1 AND d.text_hash = $8
      AND d.features_at IS NOT NULL AND d.id <> $2
    LIMIT $9)
  UNION ALL
  (SELECT d.id, 50.0 FROM document AS d
    WHERE $3::text IS NOT NULL AND d.tenant_id = $1 AND d.match_number = $3
      AND d.features_at IS NOT NULL AND d.id <> $2
    LIMIT $9)
  UNION ALL
  (SELECT d.id, 40.0 FROM document AS d
    WHERE d.tenant_id = $1 AND d.match_number = ANY ($4::text[])
      AND d.features_at IS NOT NULL AND d.id <> $2
    LIMIT $9)
  UNION ALL
  (SELECT d.id, 40.0 FROM document AS d
    WHERE $3::text IS NOT NULL AND d.normalized_references @> ARRAY[$3::text]
      AND d.features_at IS NOT NULL AND d.tenant_id = $1 AND d.id <> $2
    LIMIT $9)
  UNION ALL
  (SELECT d.id, 30.0 FROM document AS d
    WHERE cardinality($4::text[]) > 0 AND d.normalized_references && $4::text[]
      AND d.features_at IS NOT NULL AND d.tenant_id = $1 AND d.id <> $2
    LIMIT $9)
  UNION ALL
  (SELECT d.id, 10.0 * public.similarity(d.normalized_counterparty, $5::text) FROM document AS d
    WHERE $5::text IS NOT NULL
      AND d.normalized_counterparty OPERATOR(public.%) $5::text
      AND d.features_at IS NOT NULL AND d.tenant_id = $1 AND d.id <> $2
    ORDER BY 2 DESC
    LIMIT $9)
  UNION ALL
  (SELECT d.id, 5.0 FROM document AS d
    WHERE $6::numeric IS NOT NULL AND $7::date IS NOT NULL AND d.tenant_id = $1
      AND d.match_total BETWEEN $6::numeric - abs($6::numeric) * 0.01
                            AND $6::numeric + abs($6::numeric) * 0.01
      AND d.match_date BETWEEN $7::date - 90 AND $7::date + 90
      AND d.features_at IS NOT NULL AND d.id <> $2
    ORDER BY abs(d.match_total - $6::numeric)
    LIMIT $9)
), best AS (
  SELECT h.id, sum(h.score) AS score FROM hits AS h GROUP BY h.id
  ORDER BY score DESC, h.id LIMIT $9
)
SELECT d.id, d.tenant_id,
       COALESCE((SELECT i.source_metadata->>'file_name' FROM ingestion AS i
                  WHERE i.document_id = d.id ORDER BY i.created_at DESC, i.id DESC LIMIT 1),
                d.file_path),
       COALESCE(d.match_kind, ''), COALESCE(d.match_number, ''),
       COALESCE(array_to_json(d.normalized_references)::text, '[]'),
       COALESCE(d.match_counterparty, ''), COALESCE(d.normalized_counterparty, ''),
       d.match_total, COALESCE(d.match_currency, ''),
       COALESCE(to_char(d.match_date, 'YYYY-MM-DD'), ''),
       COALESCE(d.searchable_text, ''), COALESCE(d.text_hash, ''),
       COALESCE(d.structured_data::text, '{}')
  FROM best AS b JOIN document AS d ON d.id = b.id
 ORDER BY b.score DESC, d.id
)sql";

constexpr pg::statement candidates_st{"ingestd_match_candidates", candidates_text};

// The write phase's statements, in one transaction (write_matches).
constexpr pg::statement tenant_sql{"ingestd_match_tenant", R"sql(
SELECT tenant_id FROM document
 WHERE id = $1 AND matching_claim_token = $2 AND matching_status = 'in-progress'
)sql"};

// Serialises the write phases of one tenant (in this schema: tests share tenant ids across
// schemas). Held until COMMIT or ROLLBACK; a wait longer than lock_timeout fails transiently.
constexpr pg::statement tenant_lock_sql{
  "ingestd_match_tenant_lock",
  "SELECT pg_advisory_xact_lock(1769107, hashtext(current_schema() || ':' || $1))"};

constexpr pg::statement fence_sql{"ingestd_match_fence", R"sql(
SELECT id FROM document
 WHERE id = $1 AND matching_claim_token = $2 AND matching_status = 'in-progress'
 FOR UPDATE
)sql"};

// New neighbours that are another tenant's documents.
constexpr pg::statement foreign_sql{"ingestd_match_foreign", R"sql(
SELECT id FROM document WHERE id = ANY ($1::uuid[]) AND tenant_id <> $2
)sql"};

// Whose cluster may change: the document, its old partners, its new neighbours, and every
// member of their clusters. Before the delete (the old partners are still edges).
constexpr pg::statement affected_sql{"ingestd_match_affected", R"sql(
WITH seed AS (
  SELECT $1::uuid AS id
  UNION
  SELECT CASE WHEN m.document_a_id = $1 THEN m.document_b_id ELSE m.document_a_id END
    FROM document_match AS m WHERE m.document_a_id = $1 OR m.document_b_id = $1
  UNION
  SELECT d.id FROM document AS d WHERE d.id = ANY ($2::uuid[])
)
SELECT id FROM seed
UNION
SELECT m.id FROM document AS s JOIN document AS m ON m.cluster_id = s.cluster_id
 WHERE s.id IN (SELECT id FROM seed) AND s.cluster_id IS NOT NULL
)sql"};

constexpr pg::statement delete_edges_sql{"ingestd_match_delete_edges", R"sql(
DELETE FROM document_match WHERE document_a_id = $1 OR document_b_id = $1
)sql"};

constexpr pg::statement insert_edges_sql{"ingestd_match_insert_edges", R"sql(
INSERT INTO document_match (document_a_id, document_b_id, kind, confidence, reason)
SELECT least($1::uuid, e.other), greatest($1::uuid, e.other), e.kind, e.confidence, e.reason
  FROM unnest($2::uuid[], $3::text[], $4::double precision[], $5::text[])
       AS e(other, kind, confidence, reason)
)sql"};

// Each affected document's cluster: the smallest id of its connected component, by following
// edges within the affected set (which is closed under the edges once they are written: the old
// cluster and the neighbours' clusters were components before). DISTINCT ON stands in for
// min(uuid), which PostgreSQL 15 lacks. Quadratic in a component's size, which stays small.
constexpr pg::statement clusters_sql{"ingestd_match_clusters", R"sql(
WITH RECURSIVE aff AS (
  SELECT DISTINCT unnest($1::uuid[]) AS id
), edge AS (
  SELECT m.document_a_id AS x, m.document_b_id AS y FROM document_match AS m
   WHERE m.document_a_id IN (SELECT id FROM aff) AND m.document_b_id IN (SELECT id FROM aff)
  UNION ALL
  SELECT m.document_b_id, m.document_a_id FROM document_match AS m
   WHERE m.document_a_id IN (SELECT id FROM aff) AND m.document_b_id IN (SELECT id FROM aff)
), reach (root, node) AS (
  SELECT id, id FROM aff
  UNION
  SELECT r.root, e.y FROM reach AS r JOIN edge AS e ON e.x = r.node
), component AS (
  SELECT DISTINCT ON (node) node, root FROM reach ORDER BY node, root
)
UPDATE document AS d SET cluster_id = c.root
  FROM component AS c
 WHERE d.id = c.node AND d.cluster_id IS DISTINCT FROM c.root
)sql"};

constexpr pg::statement succeed_sql{"ingestd_match_succeed", R"sql(
UPDATE document
   SET matching_status = 'succeeded', matching_error = NULL, matching_claim_token = NULL,
       matching_claimed_by = NULL, matching_lease_expires_at = NULL
 WHERE id = $1 AND matching_claim_token = $2 AND matching_status = 'in-progress'
)sql"};

// After a COMMIT whose answer was lost: where the document stands.
constexpr pg::statement reread_sql{"ingestd_match_reread", R"sql(
SELECT matching_status, matching_claim_token FROM document WHERE id = $1
)sql"};

constexpr pg::statement failure_sql{"ingestd_match_record_failure", R"sql(
UPDATE document
   SET matching_status = CASE WHEN $3::boolean OR matching_attempts >= greatest($4::integer, 1)
                              THEN 'failed' ELSE 'pending' END,
       matching_failed_at = CASE WHEN $3::boolean OR matching_attempts >= greatest($4::integer, 1)
                                 THEN now() ELSE matching_failed_at END,
       matching_error = $5,
       matching_claim_token = NULL, matching_claimed_by = NULL, matching_lease_expires_at = NULL,
       matching_message_seen_at = now()
 WHERE id = $1 AND matching_claim_token = $2 AND matching_status = 'in-progress'
RETURNING matching_attempts, matching_status
)sql"};

constexpr pg::statement release_sql{"ingestd_match_release", R"sql(
UPDATE document
   SET matching_status = 'pending', matching_attempts = greatest(matching_attempts - 1, 0),
       matching_claim_token = NULL, matching_claimed_by = NULL, matching_lease_expires_at = NULL,
       matching_message_seen_at = now()
 WHERE id = $1 AND matching_claim_token = $2 AND matching_status = 'in-progress'
)sql"};

constexpr pg::statement renew_sql{"ingestd_match_renew_leases", R"sql(
WITH r AS (
  SELECT r.id, r.token FROM unnest($1::uuid[], $2::uuid[]) AS r(id, token)
), lock AS (
  SELECT d.id, d.matching_claim_token FROM document AS d
    JOIN r ON r.id = d.id AND r.token = d.matching_claim_token
   WHERE d.matching_status = 'in-progress'
   ORDER BY d.id
   FOR UPDATE OF d
), renewed AS (
  UPDATE document AS d
     SET matching_lease_expires_at = now() + make_interval(secs => $3::double precision),
         matching_message_seen_at = now()
    FROM lock
   WHERE d.id = lock.id AND d.matching_claim_token = lock.matching_claim_token
     AND d.matching_status = 'in-progress'
  RETURNING d.id, d.matching_claim_token
)
SELECT r.id, r.token FROM r
 WHERE NOT EXISTS (SELECT 1 FROM renewed AS n WHERE n.id = r.id AND n.matching_claim_token = r.token)
)sql"};

// The matching stage's net, one sweeper per cluster at a time (advisory lock keyed by the schema):
// pending documents whose message was last seen longer ago than $1 s and, on the Postgres queue,
// that no message of the match queue $3 names (a dead-lettered one does not count: it will not be
// delivered again). Marks them seen now and returns their ids for re-enqueueing.
constexpr pg::statement rescue_sql{"ingestd_match_rescue", R"sql(
WITH lock AS (
  SELECT pg_try_advisory_xact_lock(1769105, hashtext(current_schema())) AS held
), stranded AS (
  SELECT d.id FROM document AS d
   WHERE (SELECT held FROM lock)
     AND d.matching_status = 'pending'
     AND d.matching_message_seen_at < now() - make_interval(secs => $1::double precision)
     AND NOT EXISTS (SELECT 1 FROM queue_message AS q
                      WHERE q.queue_name = $3 AND lower(btrim(q.body)) = d.id::text)
   ORDER BY d.matching_message_seen_at
   LIMIT $2
   FOR UPDATE SKIP LOCKED
)
UPDATE document AS d SET matching_message_seen_at = now()
  FROM stranded WHERE d.id = stranded.id
RETURNING d.id
)sql"};

constexpr pg::statement edges_of_sql{"ingestd_match_edges_of", R"sql(
SELECT document_a_id, document_b_id, kind, confidence, reason FROM document_match
 WHERE document_a_id = $1 OR document_b_id = $1
 ORDER BY confidence DESC, document_a_id, document_b_id
)sql"};

constexpr pg::statement members_sql{"ingestd_match_members", R"sql(
SELECT d.id FROM document AS d WHERE d.id = $1
UNION
SELECT m.id FROM document AS s JOIN document AS m ON m.cluster_id = s.cluster_id
 WHERE s.id = $1 AND s.cluster_id IS NOT NULL
ORDER BY 1
)sql"};

// -- helpers ---------------------------------------------------------------------------------

std::string uuids(const std::vector<uuid>& ids) {
  std::vector<param> items;
  items.reserve(ids.size());
  for (auto& id : ids)
    items.emplace_back(id.str());
  return pg::array_literal(items);
}

error claim_lost(const lease_ref& ref, std::string_view what) {
  return error::make_claim_lost(std::string{what} + ": document " + ref.ingestion_id.str()
                                + " is no longer held by matching claim "
                                + ref.claim_token.str());
}

/// YYYY-MM-DD naming a real day (what a ::date cast accepts without failing the statement).
bool valid_date(const std::string& s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-')
    return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (s[i] < '0' || s[i] > '9')
      return false;
  int y = std::stoi(s.substr(0, 4));
  int m = std::stoi(s.substr(5, 2));
  int d = std::stoi(s.substr(8, 2));
  if (y < 1 || m < 1 || m > 12 || d < 1)
    return false;
  static constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= days[m - 1] + (m == 2 && leap ? 1 : 0);
}

param opt_date(const std::string& s) {
  return valid_date(s) ? param{s} : param{};
}

param opt_total(const std::optional<double>& total) {
  if (!total || !std::isfinite(*total))
    return {};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", *total);
  return param{buf};
}

std::string references_literal(const std::vector<std::string>& refs) {
  std::vector<param> items;
  std::set<std::string> seen;
  for (auto& r : refs)
    if (!r.empty() && seen.insert(r).second)
      items.push_back(clean(r));
  return pg::array_literal(items);
}

std::vector<std::string> json_strings(std::string_view json) {
  std::vector<std::string> out;
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsArray())
    return out;
  for (auto& v : doc.GetArray())
    if (v.IsString())
      out.emplace_back(v.GetString(), v.GetStringLength());
  return out;
}

/// A document as the candidates statement (and the bench's sample) selects it.
match_document document_row(const pg::rows& res, int r) {
  match_document d;
  d.id = parse_uuid(res.text(r, 0));
  d.tenant_id = parse_uuid(res.text(r, 1));
  d.file_name = res.str(r, 2);
  d.features.kind = res.str(r, 3);
  d.features.number = res.str(r, 4);
  d.features.references = json_strings(res.text(r, 5));
  d.features.counterparty = res.str(r, 6);
  d.features.normalized_counterparty = res.str(r, 7);
  if (!res.is_null(r, 8))
    d.features.total = res.f64(r, 8);
  d.features.currency = res.str(r, 9);
  d.features.date = res.str(r, 10);
  d.features.searchable_text = res.str(r, 11);
  d.features.text_hash = res.str(r, 12);
  d.structured_data = res.str(r, 13);
  return d;
}

/// The edges as they will be stored: one per other document (the highest confidence), or a
/// permanent error naming the first bad one.
result<std::vector<match_edge>> checked_edges(const uuid& self, std::vector<match_edge> edges) {
  std::map<uuid, match_edge> by_other;
  for (auto& e : edges) {
    if (e.other == self)
      return error::make_permanent("match.bad_edge",
                                   "an edge from document " + self.str() + " to itself");
    if (e.kind.empty())
      return error::make_permanent("match.bad_edge",
                                   "an edge to document " + e.other.str() + " without a kind");
    if (!std::isfinite(e.confidence) || e.confidence < 0 || e.confidence > 1)
      return error::make_permanent("match.bad_edge", "an edge to document " + e.other.str()
                                                       + " with confidence "
                                                       + std::to_string(e.confidence)
                                                       + " (expected 0..1)");
    auto [it, inserted] = by_other.emplace(e.other, e);
    if (!inserted && e.confidence > it->second.confidence)
      it->second = e;
  }
  std::vector<match_edge> out;
  out.reserve(by_other.size());
  for (auto& [other, e] : by_other)
    out.push_back(std::move(e));
  return out;
}

/// The write phase between BEGIN and COMMIT; an error leaves the caller to roll back.
result<void> write_phase(pg::connection& conn, const lease_ref& ref,
                         const std::vector<match_edge>& edges) {
  auto doc = ref.ingestion_id.str();
  auto token = ref.claim_token.str();
  auto tenant = conn.exec(tenant_sql, {doc, token});
  if (!tenant)
    return tenant.error();
  if (tenant->size() == 0)
    return claim_lost(ref, "write_matches");
  auto tenant_id = tenant->str(0, 0);
  if (auto locked = conn.exec(tenant_lock_sql, {tenant_id}); !locked)
    return locked.error();
  // Fenced again under the lock: the claim may have been taken over while we waited.
  auto fenced = conn.exec(fence_sql, {doc, token});
  if (!fenced)
    return fenced.error();
  if (fenced->size() == 0)
    return claim_lost(ref, "write_matches");

  std::vector<uuid> others;
  std::vector<param> kinds, confidences, reasons;
  for (auto& e : edges) {
    others.push_back(e.other);
    kinds.push_back(clean(e.kind));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6f", e.confidence);
    confidences.emplace_back(buf);
    reasons.push_back(clean(e.reason));
  }
  auto neighbours = uuids(others);
  auto foreign = conn.exec(foreign_sql, {neighbours, tenant_id});
  if (!foreign)
    return foreign.error();
  if (foreign->size() > 0)
    return error::make_permanent("match.other_tenant", "an edge from document " + doc
                                                         + " to document " + foreign->str(0, 0)
                                                         + " of another tenant");
  auto affected = conn.exec(affected_sql, {doc, neighbours});
  if (!affected)
    return affected.error();
  std::vector<uuid> members;
  members.reserve(static_cast<size_t>(affected->size()));
  for (int r = 0; r < affected->size(); ++r)
    members.push_back(parse_uuid(affected->text(r, 0)));
  // New neighbours that do not exist are not among them: the insert's foreign key refuses them.
  if (auto res = conn.exec(delete_edges_sql, {doc}); !res)
    return res.error();
  if (!edges.empty()) {
    auto res = conn.exec(insert_edges_sql,
                         {doc, neighbours, pg::array_literal(kinds),
                          pg::array_literal(confidences), pg::array_literal(reasons)});
    if (!res)
      return res.error();
  }
  if (auto res = conn.exec(clusters_sql, {uuids(members)}); !res)
    return res.error();
  auto done = conn.exec(succeed_sql, {doc, token});
  if (!done)
    return done.error();
  if (done->affected() == 0)
    return claim_lost(ref, "write_matches");
  return {};
}

} // namespace

// -- the repository --------------------------------------------------------------------------

pg_matching_repository::pg_matching_repository(std::string database_url,
                                               const pg_repository_options& opts)
  : pool_(std::make_shared<pg::pool>(
    std::move(database_url), pg::pool_options{opts.pool_size, "ingestd-match", opts.session})) {
}

pg_matching_repository::pg_matching_repository(std::shared_ptr<pg::pool> pool)
  : pool_(std::move(pool)) {
}

pg_matching_repository::~pg_matching_repository() = default;

const char* pg_matching_repository::candidates_sql() {
  return candidates_text;
}

void pg_matching_repository::claim(uuid document_id, uuid claim_token, std::string worker_id,
                                   std::chrono::seconds lease, int32_t max_attempts,
                                   callback<std::optional<matching_claim>> done) {
  pool_->call(std::move(done), [document_id, claim_token, worker_id = std::move(worker_id), lease,
                                max_attempts](pg::connection& conn, const auto& done) {
    auto res = conn.exec(claim_sql, {document_id.str(), claim_token.str(), clean(worker_id),
                                     std::to_string(std::max<int64_t>(lease.count(), 0)),
                                     std::to_string(max_attempts)});
    if (!res)
      return done(res.error());
    if (res->size() == 0 || res->boolean(0, 7))
      return done(std::optional<matching_claim>{});
    matching_claim c;
    c.document_id = parse_uuid(res->text(0, 0));
    c.claim_token = claim_token;
    c.tenant_id = parse_uuid(res->text(0, 1));
    c.attempt_count = static_cast<int32_t>(std::max<int64_t>(res->i64(0, 2) - 1, 0));
    c.content_hash = res->str(0, 3);
    c.structured_data = res->str(0, 4);
    c.file_name = res->str(0, 5);
    c.transcription_file_path = res->str(0, 6);
    done(std::optional<matching_claim>{std::move(c)});
  });
}

void pg_matching_repository::state(uuid document_id, callback<ingestion_state> done) {
  pool_->call(std::move(done), [document_id](pg::connection& conn, const auto& done) {
    auto res = conn.exec(state_sql, {document_id.str()});
    if (!res)
      return done(res.error());
    if (res->size() == 0 || res->is_null(0, 0))
      return done(ingestion_state::unknown);
    auto status = res->text(0, 0);
    if (status == "succeeded")
      return done(ingestion_state::completed);
    if (status == "failed")
      return done(ingestion_state::failed);
    if (status == "in-progress" && res->boolean(0, 1))
      return done(ingestion_state::held);
    done(ingestion_state::claimable);
  });
}

void pg_matching_repository::store_features(lease_ref ref, match_features features,
                                            callback<void> done) {
  pool_->call(std::move(done), [ref, f = std::move(features)](pg::connection& conn,
                                                              const auto& done) {
    auto res = conn.exec(features_sql,
                         {ref.ingestion_id.str(), ref.claim_token.str(), opt_clean(f.kind),
                          opt_clean(f.number), opt_clean(f.counterparty),
                          opt_clean(f.normalized_counterparty), references_literal(f.references),
                          opt_total(f.total), opt_clean(f.currency), opt_date(f.date),
                          opt_clean(f.searchable_text), opt_clean(f.text_hash)});
    if (!res)
      return done(res.error());
    if (res->affected() == 0)
      return done(claim_lost(ref, "store_features"));
    done(result<void>{});
  });
}

void pg_matching_repository::candidates(uuid tenant_id, uuid document_id, match_features features,
                                        int limit, callback<std::vector<match_document>> done) {
  pool_->call(std::move(done), [tenant_id, document_id, f = std::move(features),
                                limit](pg::connection& conn, const auto& done) {
    if (limit < 1)
      return done(std::vector<match_document>{});
    auto date = opt_date(f.date);
    auto total = opt_total(f.total);
    auto res = conn.exec(candidates_st,
                         {tenant_id.str(), document_id.str(), opt_clean(f.number),
                          references_literal(f.references), opt_clean(f.normalized_counterparty),
                          total, date, opt_clean(f.text_hash),
                          std::to_string(std::min(limit, 1000))});
    if (!res)
      return done(res.error());
    std::vector<match_document> out;
    out.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      out.push_back(document_row(*res, r));
    done(std::move(out));
  });
}

void pg_matching_repository::write_matches(lease_ref ref, std::vector<match_edge> edges,
                                           callback<void> done) {
  pool_->call(std::move(done), [ref, edges = std::move(edges)](pg::connection& conn,
                                                               const auto& done) {
    auto checked = checked_edges(ref.ingestion_id, edges);
    if (!checked)
      return done(checked.error());
    if (auto begun = conn.exec_simple("BEGIN"); !begun)
      return done(begun.error());
    auto phase = write_phase(conn, ref, *checked);
    if (!phase) {
      // On a broken connection the server rolls back by itself; a failing ROLLBACK changes
      // nothing either way.
      (void) conn.exec_simple("ROLLBACK");
      return done(phase.error());
    }
    auto committed = conn.exec_simple("COMMIT");
    if (committed)
      return done(result<void>{});
    auto err = committed.error();
    if (!database_unavailable(err) && err.code != "pg.08007")
      return done(err);
    // The COMMIT's answer was lost: re-read instead of guessing. Succeeded with the claim
    // cleared is ours (we held the claim); still ours and in progress means not applied.
    auto reread = conn.exec(reread_sql, {ref.ingestion_id.str()});
    if (!reread || reread->size() == 0)
      return done(err);
    auto status = reread->text(0, 0);
    if (status == "succeeded" && reread->is_null(0, 1))
      return done(result<void>{});
    if (status == "in-progress" && reread->text(0, 1) == ref.claim_token.str())
      return done(err);
    done(claim_lost(ref, "write_matches"));
  });
}

void pg_matching_repository::record_failure(lease_ref ref, failure_record record,
                                            callback<failure_outcome> done) {
  pool_->call(std::move(done), [ref, record = std::move(record)](pg::connection& conn,
                                                                 const auto& done) {
    auto res = conn.exec(failure_sql, {ref.ingestion_id.str(), ref.claim_token.str(),
                                       record.error.permanent() ? "t" : "f",
                                       std::to_string(record.max_attempts),
                                       clean(record.error.describe())});
    if (!res)
      return done(res.error());
    if (res->size() == 0)
      return done(claim_lost(ref, "record_failure"));
    failure_outcome out;
    out.attempt_count = static_cast<int32_t>(res->i64(0, 0));
    out.failed = res->text(0, 1) == "failed";
    done(out);
  });
}

void pg_matching_repository::release(lease_ref ref, callback<void> done) {
  pool_->call(std::move(done), [ref](pg::connection& conn, const auto& done) {
    auto res = conn.exec(release_sql, {ref.ingestion_id.str(), ref.claim_token.str()});
    if (!res)
      return done(res.error());
    if (res->affected() == 0)
      return done(claim_lost(ref, "release"));
    done(result<void>{});
  });
}

void pg_matching_repository::rescue_stranded(std::string queue_name, std::chrono::seconds stale_threshold,
                                             int limit, callback<std::vector<uuid>> done) {
  pool_->call(std::move(done), [queue_name = std::move(queue_name), stale_threshold,
                                limit](pg::connection& conn, const auto& answer) {
    auto res = conn.exec(rescue_sql, {std::to_string(stale_threshold.count()), std::to_string(limit), queue_name});
    if (!res)
      return answer(res.error());
    std::vector<uuid> ids;
    ids.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      ids.push_back(parse_uuid(res->text(r, 0)));
    answer(std::move(ids));
  });
}

void pg_matching_repository::renew_leases(std::vector<lease_ref> refs, std::chrono::seconds lease,
                                          callback<std::vector<lease_ref>> done) {
  pool_->call(std::move(done), [refs = std::move(refs), lease](pg::connection& conn,
                                                               const auto& done) {
    if (refs.empty())
      return done(std::vector<lease_ref>{});
    std::vector<uuid> ids, tokens;
    for (auto& r : refs) {
      ids.push_back(r.ingestion_id);
      tokens.push_back(r.claim_token);
    }
    auto res = conn.exec(renew_sql, {uuids(ids), uuids(tokens),
                                     std::to_string(std::max<int64_t>(lease.count(), 0))});
    if (!res)
      return done(res.error());
    std::vector<lease_ref> lost;
    lost.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      lost.push_back(lease_ref{parse_uuid(res->text(r, 0)), parse_uuid(res->text(r, 1))});
    done(std::move(lost));
  });
}

void pg_matching_repository::matches_of(
  uuid document_id, callback<std::pair<std::vector<stored_match>, std::vector<uuid>>> done) {
  pool_->call(std::move(done), [document_id](pg::connection& conn, const auto& done) {
    auto id = document_id.str();
    auto edges = conn.exec(edges_of_sql, {id});
    if (!edges)
      return done(edges.error());
    auto members = conn.exec(members_sql, {id});
    if (!members)
      return done(members.error());
    std::pair<std::vector<stored_match>, std::vector<uuid>> out;
    for (int r = 0; r < edges->size(); ++r)
      out.first.push_back(stored_match{parse_uuid(edges->text(r, 0)),
                                       parse_uuid(edges->text(r, 1)), edges->str(r, 2),
                                       edges->f64(r, 3), edges->str(r, 4)});
    for (int r = 0; r < members->size(); ++r)
      out.second.push_back(parse_uuid(members->text(r, 0)));
    done(std::move(out));
  });
}

} // namespace ingestd

// -- bench and test support ------------------------------------------------------------------

namespace ingestd {

namespace {

// Documents $2..$3 of a synthetic tenant $1, pseudo-random in md5($4 || n): counterparties from
// a pool of $5 names of two made-up words, invoice numbers, every 20th a credit note referring
// to an invoice, every 10th an invoice referring to a purchase order, totals 10..10,000 and
// dates over three years.
constexpr pg::statement synthetic_sql{"ingestd_match_synthetic", R"sql(
INSERT INTO document (id, tenant_id, content_hash, file_path, mime_type, structured_data,
                      matching_status, matching_attempts, cluster_id, match_kind, match_number,
                      match_counterparty, normalized_counterparty, normalized_references,
                      match_total, match_currency, match_date, searchable_text, text_hash,
                      features_at)
SELECT g.id, $1::uuid, g.h, 'synthetic/' || g.n || '.pdf', 'application/pdf',
       jsonb_build_object('invoice_number', g.number, 'supplier_name', g.cp, 'total', g.total),
       $6::text, CASE WHEN $6::text = 'succeeded' THEN 1 ELSE 0 END, g.id, g.kind, g.number, g.cp, g.cp, g.refs, g.total, 'EUR', g.day,
       g.kind || ' ' || g.number || ' ' || g.cp || ' ' || g.total, md5(g.h || 'text'), now()
  FROM (
    SELECT n, gen_random_uuid() AS id, h,
           CASE WHEN n % 20 = 0 THEN 'credit_note' ELSE 'invoice' END AS kind,
           CASE WHEN n % 20 = 0 THEN 'CN' ELSE 'INV' END || (100000 + n) AS number,
           translate(substr(md5($4 || ':cp:' || (n % $5)), 1, 9), '0123456789', 'ghijklmnop')
             || ' ' ||
           translate(substr(md5($4 || ':cq:' || (n % $5)), 1, 7), '0123456789', 'qrstuvwxyz')
             AS cp,
           CASE WHEN n % 20 = 0 THEN ARRAY['INV' || (100000 + n - 7)]
                WHEN n % 10 = 0 THEN ARRAY['PO' || (n % 5000)]
                ELSE ARRAY[]::text[] END AS refs,
           round((10 + ('x' || substr(h, 1, 8))::bit(32)::bigint % 999000 / 100.0)::numeric, 2)
             AS total,
           DATE '2023-01-01' + (('x' || substr(h, 9, 4))::bit(16)::int % 1095) AS day
      FROM (SELECT n, md5($4 || ':' || n) AS h FROM generate_series($2::bigint, $3::bigint) AS n) AS s
  ) AS g
)sql"};

// VACUUM too: it moves the bulk insert out of the GIN indexes' pending lists, as autovacuum
// would, so that the planner costs and the timings are those of a settled table.
// A pseudo-random sample of the tenant's documents with features and the given status.
constexpr pg::statement sample_sql{"ingestd_match_sample", R"sql(
SELECT d.id, d.tenant_id, d.file_path,
       COALESCE(d.match_kind, ''), COALESCE(d.match_number, ''),
       COALESCE(array_to_json(d.normalized_references)::text, '[]'),
       COALESCE(d.match_counterparty, ''), COALESCE(d.normalized_counterparty, ''),
       d.match_total, COALESCE(d.match_currency, ''),
       COALESCE(to_char(d.match_date, 'YYYY-MM-DD'), ''),
       COALESCE(d.searchable_text, ''), COALESCE(d.text_hash, ''),
       COALESCE(d.structured_data::text, '{}')
  FROM document AS d
 WHERE d.tenant_id = $1 AND d.features_at IS NOT NULL AND d.matching_status = $3
 ORDER BY md5(d.id::text)
 LIMIT $2
)sql"};

constexpr pg::statement analyze_sql{"ingestd_match_analyze", "VACUUM ANALYZE document"};

} // namespace

result<int64_t> load_synthetic_match_documents(const std::string& database_url, uuid tenant_id,
                                               int64_t count, int64_t seed,
                                               const std::string& matching_status) {
  pg::connection conn{database_url, pg::session_options::tcp_only()};
  if (auto ok = conn.ensure(true); !ok)
    return ok.error();
  auto names = std::to_string(std::max<int64_t>(count / 50, 1));
  // The seed names the tenant too: two loads into one schema do not collide on content_hash.
  auto key = std::to_string(seed) + ":" + tenant_id.str();
  int64_t inserted = 0;
  constexpr int64_t batch = 10000;
  for (int64_t from = 1; from <= count; from += batch) {
    auto to = std::min(count, from + batch - 1);
    auto res = conn.exec(synthetic_sql, {tenant_id.str(), std::to_string(from),
                                         std::to_string(to), key, names, matching_status});
    if (!res)
      return res.error();
    inserted += res->affected();
  }
  if (auto res = conn.exec(analyze_sql, {}); !res)
    return res.error();
  return inserted;
}

result<std::vector<match_document>> sample_synthetic_match_documents(
  const std::string& database_url, uuid tenant_id, int count, const std::string& matching_status) {
  pg::connection conn{database_url, pg::session_options::tcp_only()};
  if (auto ok = conn.ensure(true); !ok)
    return ok.error();
  auto res = conn.exec(sample_sql, {tenant_id.str(), std::to_string(std::max(count, 0)),
                                    matching_status});
  if (!res)
    return res.error();
  std::vector<match_document> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int r = 0; r < res->size(); ++r)
    out.push_back(document_row(*res, r));
  return out;
}

} // namespace ingestd
