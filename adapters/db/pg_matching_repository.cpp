// pg_matching_repository: what the match stage reads of its document, the fenced pre-processing
// writes, candidate retrieval, and the write phase (delete edges, insert edges, recompute
// clusters, complete the work item) in one transaction under the tenant's advisory lock.
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
#include "adapters/db/pg_work.hpp"

namespace ingestd {

namespace {

using pg::clean;
using pg::opt_clean;
using pg::opt_text;
using pg::param;
using pg::parse_uuid;

// -- statements ------------------------------------------------------------------------------

// The document's data, the file name of its latest ingestion, and the transcription of its
// latest completed one.
constexpr pg::statement match_load_sql{"ingestd_match_load", R"sql(
SELECT COALESCE(d.structured_data::text, '{}'),
       COALESCE((SELECT i.source_metadata->>'file_name' FROM ingestion AS i
                  WHERE i.document_id = d.id ORDER BY i.created_at DESC, i.id DESC LIMIT 1),
                d.file_path),
       COALESCE((SELECT i.transcription_file_path FROM ingestion AS i
                  WHERE i.document_id = d.id AND i.status = 'completed'
                  ORDER BY i.completed_at DESC NULLS LAST, i.created_at DESC LIMIT 1), '')
  FROM document AS d WHERE d.id = $1
)sql"};

// Under the tenant's matching lock (the write phase's, below; one statement, so held until its
// commit), with the next features_seq: the order of the stores is the order of their commits.
// Whoever stores later retrieves its candidates after the earlier store is visible.
constexpr pg::statement features_sql{"ingestd_match_store_features", R"sql(
WITH held AS MATERIALIZED (
  SELECT w.id,
         pg_advisory_xact_lock(1769107, hashtext(current_schema() || ':' || w.tenant_id::text))
    FROM work_item AS w
   WHERE w.id = $1 AND w.claim_token = $2 AND w.status = 'in-progress'
)
UPDATE document AS d
   SET match_kind = $3, match_number = $4, match_counterparty = $5,
       normalized_counterparty = $6, normalized_references = $7::text[],
       match_total = $8::numeric, match_currency = $9, match_date = $10::date,
       searchable_text = $11, text_hash = $12, features_at = now(),
       features_seq = nextval('document_features_seq')
  FROM held
 WHERE d.id = held.id
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

// The claimed document's tenant, and the lock that serialises the write phases of one tenant (in
// this schema: tests share tenant ids across schemas), taken by the same statement. Held until
// COMMIT or ROLLBACK; a wait longer than lock_timeout fails transiently.
constexpr pg::statement tenant_lock_sql{"ingestd_match_tenant_lock", R"sql(
SELECT w.tenant_id,
       pg_advisory_xact_lock(1769107, hashtext(current_schema() || ':' || w.tenant_id::text))
  FROM work_item AS w
 WHERE w.id = $1 AND w.claim_token = $2 AND w.status = 'in-progress'
)sql"};

// Under the tenant's lock, in one statement (parameters: the document, its token, the new
// neighbours, the tenant), rows of (what, id):
//   held      the claim still holds (fenced again: it may have been taken over while we waited);
//             the work item is locked
//   foreign   a new neighbour that is another tenant's document
//   affected  whose cluster may change: the document, its old partners, its new neighbours, and
//             every member of their clusters; read before the delete (the old partners are still
//             edges)
// One generic plan, as for the clusters below: PostgreSQL planned each document's write phase
// anew at nearly every call (2 ms of planning per document over the two). The cluster members are
// found by key, the seed's documents, then their clusters' members: joined as tables, a plan made
// while the statistics said no document had a cluster yet walked every clustered document for each
// match (the match stage of bench/orchestration at 201 documents/s instead of 910, with documents
// analyzed only after 50,000 changes).
constexpr pg::statement fence_sql{"ingestd_match_fence", R"sql(
WITH held AS (
  SELECT id FROM work_item WHERE id = $1 AND claim_token = $2 AND status = 'in-progress'
     FOR UPDATE
), foreign_document AS (
  SELECT id FROM document WHERE id = ANY ($3::uuid[]) AND tenant_id <> $4::uuid LIMIT 1
), seed AS (
  SELECT $1::uuid AS id
  UNION
  SELECT CASE WHEN m.document_a_id = $1 THEN m.document_b_id ELSE m.document_a_id END
    FROM document_match AS m WHERE m.document_a_id = $1 OR m.document_b_id = $1
  UNION
  SELECT d.id FROM document AS d WHERE d.id = ANY ($3::uuid[])
), affected AS (
  SELECT id FROM seed
  UNION
  SELECT m.id
    FROM seed
   CROSS JOIN LATERAL (SELECT s.cluster_id FROM document AS s WHERE s.id = seed.id OFFSET 0) AS s
   CROSS JOIN LATERAL (SELECT m.id FROM document AS m WHERE m.cluster_id = s.cluster_id OFFSET 0) AS m
)
SELECT 'held', id FROM held
UNION ALL
SELECT 'foreign', id FROM foreign_document
UNION ALL
SELECT 'affected', id FROM affected
)sql",
                                  pg::plans::generic};

// The document's edges that are its to decide: to every document whose features were stored
// before its own (its candidate retrieval saw them). An edge to a document whose features came
// later is that document's decision (made with this one's features in view) and stays, as the
// insert below leaves it.
constexpr pg::statement delete_edges_sql{"ingestd_match_delete_edges", R"sql(
DELETE FROM document_match AS m
 USING document AS self, document AS other
 WHERE self.id = $1 AND (m.document_a_id = $1 OR m.document_b_id = $1)
   AND other.id = CASE WHEN m.document_a_id = $1 THEN m.document_b_id ELSE m.document_a_id END
   AND COALESCE(other.features_seq, 0) <= COALESCE(self.features_seq, 0)
)sql"};

constexpr pg::statement insert_edges_sql{"ingestd_match_insert_edges", R"sql(
INSERT INTO document_match (document_a_id, document_b_id, kind, confidence, reason)
SELECT least($1::uuid, e.other), greatest($1::uuid, e.other), e.kind, e.confidence, e.reason
  FROM unnest($2::uuid[], $3::text[], $4::double precision[], $5::text[])
       AS e(other, kind, confidence, reason)
    ON CONFLICT (document_a_id, document_b_id) DO NOTHING
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
)sql",
                                     pg::plans::generic};

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

using pg::uuid_array;

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
      return error::make_permanent("match.bad_edge",
                                   "an edge to document " + e.other.str() + " with confidence "
                                       + std::to_string(e.confidence) + " (expected 0..1)");
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
result<void> write_phase(pg::connection& conn, const work_outcome& outcome,
                         const std::vector<match_edge>& edges, bool via_outbox) {
  auto& ref = outcome.ref;
  auto doc = ref.item.str();
  auto token = ref.token.str();
  auto tenant = conn.exec(tenant_lock_sql, {doc, token});
  if (!tenant)
    return tenant.error();
  if (tenant->size() == 0)
    return pg::claim_lost(ref, "write_matches");
  auto tenant_id = tenant->str(0, 0);

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
  auto neighbours = uuid_array(others);
  auto fenced = conn.exec(fence_sql, {doc, token, neighbours, tenant_id});
  if (!fenced)
    return fenced.error();
  bool held = false;
  std::string foreign;
  std::vector<uuid> members;
  for (int r = 0; r < fenced->size(); ++r) {
    auto what = fenced->text(r, 0);
    if (what == "held")
      held = true;
    else if (what == "foreign")
      foreign = fenced->str(r, 1);
    else
      members.push_back(parse_uuid(fenced->text(r, 1)));
  }
  if (!held)
    return pg::claim_lost(ref, "write_matches");
  if (!foreign.empty())
    return error::make_permanent("match.other_tenant", "an edge from document " + doc
                                                           + " to document " + foreign
                                                           + " of another tenant");
  // New neighbours that do not exist are not among them: the insert's foreign key refuses them.
  if (auto res = conn.exec(delete_edges_sql, {doc}); !res)
    return res.error();
  if (!edges.empty()) {
    auto res
        = conn.exec(insert_edges_sql, {doc, neighbours, pg::array_literal(kinds),
                                       pg::array_literal(confidences), pg::array_literal(reasons)});
    if (!res)
      return res.error();
  }
  if (auto res = conn.exec(clusters_sql, {uuid_array(members)}); !res)
    return res.error();
  auto finished = pg::finish_work(conn, {&outcome}, via_outbox);
  if (!finished)
    return finished.error();
  return finished->front();
}

} // namespace

// -- the repository --------------------------------------------------------------------------

pg_matching_repository::pg_matching_repository(std::string database_url,
                                               const pg_matching_options& opts)
    : via_outbox_(opts.via_outbox),
      pool_(std::make_shared<pg::pool>(
          std::move(database_url),
          pg::pool_options{opts.pool_size, "ingestd-match", opts.session})) {}

pg_matching_repository::pg_matching_repository(std::shared_ptr<pg::pool> pool)
    : pool_(std::move(pool)) {}

pg_matching_repository::~pg_matching_repository() = default;

const char* pg_matching_repository::candidates_sql() {
  return candidates_text;
}

void pg_matching_repository::load(uuid document_id, callback<matching_subject> done) {
  pool_->call(std::move(done), [document_id](pg::connection& conn, const auto& done) {
    auto res = conn.exec(match_load_sql, {document_id.str()});
    if (!res)
      return done(res.error());
    if (res->size() == 0)
      return done(error::make_permanent("match.unknown", "no document " + document_id.str()));
    done(matching_subject{res->str(0, 0), res->str(0, 1), res->str(0, 2)});
  });
}

void pg_matching_repository::store_features(claim_ref ref, match_features features,
                                            callback<void> done) {
  pool_->call(std::move(done), [ref, f = std::move(features)](pg::connection& conn,
                                                              const auto& done) {
    auto res = conn.exec(
        features_sql, {ref.item.str(), ref.token.str(), opt_clean(f.kind), opt_clean(f.number),
                       opt_clean(f.counterparty), opt_clean(f.normalized_counterparty),
                       references_literal(f.references), opt_total(f.total), opt_clean(f.currency),
                       opt_date(f.date), opt_clean(f.searchable_text), opt_clean(f.text_hash)});
    if (!res)
      return done(res.error());
    if (res->affected() == 0)
      return done(pg::claim_lost(ref, "store_features"));
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
    auto res
        = conn.exec(candidates_st,
                    {tenant_id.str(), document_id.str(), opt_clean(f.number),
                     references_literal(f.references), opt_clean(f.normalized_counterparty), total,
                     date, opt_clean(f.text_hash), std::to_string(std::min(limit, 1000))});
    if (!res)
      return done(res.error());
    std::vector<match_document> out;
    out.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      out.push_back(document_row(*res, r));
    done(std::move(out));
  });
}

void pg_matching_repository::write_matches(work_outcome outcome, std::vector<match_edge> edges,
                                           callback<void> done) {
  pool_->call(std::move(done), [outcome = std::move(outcome), edges = std::move(edges),
                                via_outbox = via_outbox_](pg::connection& conn, const auto& done) {
    auto checked = checked_edges(outcome.ref.item, edges);
    if (!checked)
      return done(checked.error());
    done(pg::transaction<void>(
        conn, [&](pg::connection& c) { return write_phase(c, outcome, *checked, via_outbox); },
        [&](pg::connection& c, const result<void>&, const error& lost) -> result<void> {
          // The COMMIT's answer was lost: read again instead of guessing.
          auto states = pg::reread_items(c, {outcome.ref.item});
          if (!states)
            return lost;
          return pg::settled(states->front(), outcome.ref, lost);
        }));
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
      out.first.push_back(stored_match{parse_uuid(edges->text(r, 0)), parse_uuid(edges->text(r, 1)),
                                       edges->str(r, 2), edges->f64(r, 3), edges->str(r, 4)});
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
WITH docs AS (
INSERT INTO document (id, tenant_id, content_hash, file_path, mime_type, structured_data,
                      cluster_id, match_kind, match_number,
                      match_counterparty, normalized_counterparty, normalized_references,
                      match_total, match_currency, match_date, searchable_text, text_hash,
                      features_at)
SELECT g.id, $1::uuid, g.h, 'synthetic/' || g.n || '.pdf', 'application/pdf',
       jsonb_build_object('invoice_number', g.number, 'supplier_name', g.cp, 'total', g.total),
       g.id, g.kind, g.number, g.cp, g.cp, g.refs, g.total, 'EUR', g.day,
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
RETURNING id, tenant_id
)
-- Each document's matching: done ('succeeded') or waiting ('pending').
INSERT INTO work_item (id, stage, document_id, tenant_id, status)
SELECT id, 'match', id, tenant_id, CASE WHEN $6::text = 'succeeded' THEN 'completed' ELSE 'in-progress' END
  FROM docs
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
 WHERE d.tenant_id = $1 AND d.features_at IS NOT NULL
   AND EXISTS (SELECT 1 FROM document_matching AS m
                WHERE m.document_id = d.id AND m.matching_status = $3)
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
    auto res = conn.exec(synthetic_sql, {tenant_id.str(), std::to_string(from), std::to_string(to),
                                         key, names, matching_status});
    if (!res)
      return res.error();
    inserted += res->affected();
  }
  if (auto res = conn.exec(analyze_sql, {}); !res)
    return res.error();
  return inserted;
}

result<std::vector<match_document>>
sample_synthetic_match_documents(const std::string& database_url, uuid tenant_id, int count,
                                 const std::string& matching_status) {
  pg::connection conn{database_url, pg::session_options::tcp_only()};
  if (auto ok = conn.ensure(true); !ok)
    return ok.error();
  auto res = conn.exec(sample_sql,
                       {tenant_id.str(), std::to_string(std::max(count, 0)), matching_status});
  if (!res)
    return res.error();
  std::vector<match_document> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int r = 0; r < res->size(); ++r)
    out.push_back(document_row(*res, r));
  return out;
}

} // namespace ingestd
