// pg_container_repository: a container's depth, and its unpacking's outcome in one transaction.
#include "adapters/db/pg_container_repository.hpp"

#include <utility>

#include "adapters/db/pg_values.hpp"
#include "adapters/db/repository.hpp"

namespace ingestd {

namespace {

using pg::param;

constexpr pg::statement depth_sql{"ingestd_container_depth",
                                  "SELECT container_depth FROM document WHERE id = $1"};

// The parent's claim, held for the transaction (the lease may not run out under it unnoticed).
constexpr pg::statement lock_parent_sql{"ingestd_unpack_lock_parent", R"sql(
SELECT i.document_id FROM ingestion AS i
 WHERE i.id = $1 AND i.claim_token = $2 AND i.status = 'in-progress'
   FOR UPDATE
)sql"};

// The children: documents (skipped when the tenant has the content), their ingestions with the
// parent ingestion's source, and their messages on the queue of their stage.
constexpr pg::statement children_sql{"ingestd_unpack_children", R"sql(
WITH c AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[],
                       $7::boolean[]) WITH ORDINALITY
           AS c(document_id, ingestion_id, content_hash, file_path, mime_type, member_name,
                container, ord)
), parent AS (
  SELECT d.id, d.tenant_id, d.container_depth, i.doc_source_id, i.uploaded_by
    FROM ingestion AS i JOIN document AS d ON d.id = i.document_id
   WHERE i.id = $8
), docs AS (
  INSERT INTO document (id, tenant_id, content_hash, file_path, mime_type, parent_id, member_name,
                        container_depth)
  SELECT c.document_id, p.tenant_id, c.content_hash, c.file_path, c.mime_type, p.id, c.member_name,
         p.container_depth + 1
    FROM c CROSS JOIN parent AS p
   ORDER BY c.ord
  ON CONFLICT (tenant_id, content_hash) DO NOTHING
  RETURNING id
), ings AS (
  INSERT INTO ingestion (id, document_id, doc_source_id, uploaded_by, status, source_metadata, stage)
  SELECT c.ingestion_id, c.document_id, p.doc_source_id, p.uploaded_by, 'in-progress',
         jsonb_build_object('file_name', c.member_name, 'channel', 'unpack',
                            'parent_document_id', p.id, 'mime_type', c.mime_type),
         CASE WHEN c.container THEN 'unpack' ELSE 'ingest' END
    FROM c JOIN docs ON docs.id = c.document_id CROSS JOIN parent AS p
  RETURNING id, stage
), queued AS (
  INSERT INTO queue_message (id, queue_name, body)
  SELECT gen_random_uuid(), CASE WHEN ings.stage = 'unpack' THEN $9::text ELSE $10::text END,
         ings.id::text
    FROM ings WHERE NOT $11::boolean
), outboxed AS (
  INSERT INTO event_outbox (destination, body)
  SELECT CASE WHEN ings.stage = 'unpack' THEN $9::text ELSE $10::text END, ings.id::text
    FROM ings WHERE $11::boolean
)
SELECT count(*) FROM ings
)sql"};

// The parent: its body and errors, then its ingestion completed (the trigger copies the
// structured data and the review flag to the document).
constexpr pg::statement parent_sql{"ingestd_unpack_parent", R"sql(
UPDATE document SET body_text = $2, unpack_error = $3, updated_at = now() WHERE id = $1
)sql"};

constexpr pg::statement complete_sql{"ingestd_unpack_complete", R"sql(
UPDATE ingestion
   SET status = 'completed', structured_data = $3::jsonb, valid_structured_data = $4::boolean,
       completed_at = now(), claim_token = NULL, lease_expires_at = NULL
 WHERE id = $1 AND claim_token = $2 AND status = 'in-progress'
)sql"};

constexpr pg::statement reread_sql{"ingestd_unpack_reread",
                                   "SELECT status, claim_token FROM ingestion WHERE id = $1"};

// The unpack stage's net: the ingest stage's rescue (adapters/db/pg_repository.cpp explains how
// "no message" is told) over the unpack ingestions, under an advisory lock of its own.
constexpr pg::statement rescue_sql{"ingestd_unpack_rescue", R"sql(
WITH lock AS (
  SELECT pg_try_advisory_xact_lock(1769108, hashtext(current_schema())) AS held
), stranded AS (
  SELECT i.id FROM ingestion AS i
   WHERE (SELECT held FROM lock)
     AND i.status = 'in-progress'
     AND i.stage = 'unpack'
     AND (i.claim_token IS NULL OR i.lease_expires_at < now())
     AND i.due_at < now() - make_interval(secs => $1::double precision)
     AND i.message_seen_at < now() - make_interval(secs => $1::double precision)
     AND NOT EXISTS (SELECT 1 FROM queue_message AS q WHERE lower(btrim(q.body)) = i.id::text)
   ORDER BY i.due_at
   LIMIT $2
   FOR UPDATE SKIP LOCKED
)
UPDATE ingestion AS i SET due_at = now(), message_seen_at = now()
  FROM stranded WHERE i.id = stranded.id
RETURNING i.id
)sql"};

error claim_lost(const lease_ref& ref) {
  return error::make_claim_lost("complete_unpack: ingestion " + ref.ingestion_id.str()
                                + " is no longer held by claim " + ref.claim_token.str());
}

/// The statements between BEGIN and COMMIT; an error leaves the caller to roll back.
result<unpack_counts> write(pg::connection& conn, const container_queues& queues, const lease_ref& ref,
                            const unpack_completion& c) {
  auto locked = conn.exec(lock_parent_sql, {ref.ingestion_id.str(), ref.claim_token.str()});
  if (!locked)
    return locked.error();
  if (locked->size() == 0)
    return claim_lost(ref);
  auto parent_document = locked->str(0, 0);

  unpack_counts counts;
  if (!c.children.empty()) {
    std::vector<param> docs, ings, hashes, paths, mimes, names, containers;
    for (auto& child : c.children) {
      docs.emplace_back(child.document_id.str());
      ings.emplace_back(child.ingestion_id.str());
      hashes.emplace_back(child.content_hash);
      paths.emplace_back(child.file_path);
      mimes.emplace_back(child.mime_type);
      names.push_back(pg::clean(child.member_name));
      containers.emplace_back(child.container ? "t" : "f");
    }
    auto res = conn.exec(children_sql,
                         {pg::array_literal(docs), pg::array_literal(ings), pg::array_literal(hashes),
                          pg::array_literal(paths), pg::array_literal(mimes), pg::array_literal(names),
                          pg::array_literal(containers), ref.ingestion_id.str(), queues.unpack_queue,
                          queues.ingest_queue, queues.via_outbox ? "t" : "f"});
    if (!res)
      return res.error();
    counts.created = static_cast<int>(res->i64(0, 0));
    counts.known = static_cast<int>(c.children.size()) - counts.created;
  }
  if (auto r = conn.exec(parent_sql, {parent_document, pg::opt_clean(c.body_text), pg::opt_clean(c.unpack_error)}); !r)
    return r.error();
  auto data = c.structured_data.empty() || !pg::valid_json(c.structured_data) ? std::string{"{}"} : c.structured_data;
  auto done = conn.exec(complete_sql, {ref.ingestion_id.str(), ref.claim_token.str(), data,
                                       c.unpack_error.empty() ? "t" : "f"});
  if (!done)
    return done.error();
  if (done->affected() == 0)
    return claim_lost(ref);
  return counts;
}

} // namespace

pg_container_repository::pg_container_repository(std::string database_url, container_queues queues,
                                                 int pool_size, pg::session_options session)
  : queues_(std::move(queues)),
    pool_(std::make_shared<pg::pool>(std::move(database_url), pg::pool_options{pool_size, "ingestd-unpack", session})) {
}

pg_container_repository::~pg_container_repository() = default;

void pg_container_repository::depth_of(uuid document_id, callback<int32_t> done) {
  pool_->call(std::move(done), [document_id](pg::connection& conn, const auto& done) {
    auto res = conn.exec(depth_sql, {document_id.str()});
    if (!res)
      return done(res.error());
    done(res->size() == 0 ? int32_t{0} : static_cast<int32_t>(res->i64(0, 0)));
  });
}

void pg_container_repository::complete_unpack(lease_ref ref, unpack_completion completion,
                                              callback<unpack_counts> done) {
  pool_->call(std::move(done), [ref, c = std::move(completion), queues = queues_](pg::connection& conn,
                                                                                   const auto& done) {
    if (auto begun = conn.exec_simple("BEGIN"); !begun)
      return done(begun.error());
    auto written = write(conn, queues, ref, c);
    if (!written) {
      // On a broken connection the server rolls back by itself.
      (void) conn.exec_simple("ROLLBACK");
      return done(written.error());
    }
    auto committed = conn.exec_simple("COMMIT");
    if (committed)
      return done(*written);
    auto err = committed.error();
    if (!database_unavailable(err) && err.code != "pg.08007")
      return done(err);
    // The COMMIT's answer was lost: completed with the claim cleared is ours; still ours and in
    // progress means not applied.
    if (!conn.ensure(true))
      return done(err);
    auto reread = conn.exec(reread_sql, {ref.ingestion_id.str()});
    if (!reread || reread->size() == 0)
      return done(err);
    if (reread->text(0, 0) == "completed")
      return done(*written);
    if (reread->text(0, 0) == "in-progress" && reread->text(0, 1) == ref.claim_token.str())
      return done(err);
    done(claim_lost(ref));
  });
}

void pg_container_repository::rescue_stranded(std::chrono::seconds stale_threshold, int limit,
                                              callback<std::vector<uuid>> done) {
  pool_->call(std::move(done), [stale_threshold, limit](pg::connection& conn, const auto& done) {
    auto res = conn.exec(rescue_sql, {std::to_string(stale_threshold.count()), std::to_string(limit)});
    if (!res)
      return done(res.error());
    std::vector<uuid> ids;
    ids.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      ids.push_back(pg::parse_uuid(res->text(r, 0)));
    done(std::move(ids));
  });
}

} // namespace ingestd
