// pg_container_repository: a container's details, and its unpacking's outcome in one transaction.
#include "adapters/db/pg_container_repository.hpp"

#include <utility>

#include "adapters/db/pg_values.hpp"
#include "adapters/db/pg_work.hpp"
#include "messages/error_codes.hpp"

namespace ingestd {

namespace {

using pg::param;

constexpr pg::statement container_load_sql{"ingestd_container_load", R"sql(
SELECT d.file_path, COALESCE(d.mime_type, ''), d.container_depth
  FROM ingestion AS i JOIN document AS d ON d.id = i.document_id
 WHERE i.id = $1
)sql"};

// The parent's claim, held for the transaction (the lease may not run out under it unnoticed),
// and whether it was cancelled meanwhile (`ingestd cancel` locks the same row first or after).
constexpr pg::statement lock_parent_sql{"ingestd_unpack_lock_parent", R"sql(
SELECT w.document_id, w.tenant_id, w.priority, w.cancel_requested_at IS NOT NULL
  FROM work_item AS w
 WHERE w.id = $1 AND w.claim_token = $2 AND w.status = 'in-progress'
   FOR UPDATE
)sql"};

// The children: documents (skipped when the tenant has the content), their ingestions with the
// parent ingestion's source and batch, and their work items with their messages.
constexpr pg::statement children_sql{"ingestd_unpack_children", R"sql(
WITH c AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[],
                       $7::text[], $8::text[]) WITH ORDINALITY
           AS c(document_id, ingestion_id, content_hash, file_path, mime_type, member_name,
                stage, queue, ord)
), parent AS (
  SELECT d.id, d.tenant_id, d.container_depth, i.doc_source_id, i.uploaded_by, i.batch_id
    FROM ingestion AS i JOIN document AS d ON d.id = i.document_id
   WHERE i.id = $9
), docs AS (
  INSERT INTO document (id, tenant_id, content_hash, file_path, mime_type, parent_id, member_name,
                        container_depth)
  SELECT c.document_id, p.tenant_id, c.content_hash, c.file_path, c.mime_type, p.id, c.member_name,
         p.container_depth + 1
    FROM c CROSS JOIN parent AS p
   ORDER BY c.ord
  ON CONFLICT (tenant_id, content_hash) DO NOTHING
  RETURNING id, tenant_id
), ings AS (
  INSERT INTO ingestion (id, document_id, doc_source_id, uploaded_by, status, source_metadata,
                         batch_id)
  SELECT c.ingestion_id, c.document_id, p.doc_source_id, p.uploaded_by, 'in-progress',
         jsonb_build_object('file_name', c.member_name, 'channel', 'unpack',
                            'parent_document_id', p.id, 'mime_type', c.mime_type),
         p.batch_id
    FROM c JOIN docs ON docs.id = c.document_id CROSS JOIN parent AS p
  RETURNING id, document_id
)
SELECT count(*) FILTER (WHERE ingestd_add_work(ings.id, c.stage, ings.document_id, docs.tenant_id,
                                               $10::integer, 'small', c.queue, $11::boolean, false))
  FROM ings JOIN c ON c.ingestion_id = ings.id JOIN docs ON docs.id = ings.document_id
)sql"};

// The parent: its body and errors, and its ingestion's structured data (the work item's
// completion, in the same transaction, sets its status; the trigger moves the document).
constexpr pg::statement parent_sql{"ingestd_unpack_parent", R"sql(
UPDATE document SET body_text = $2, unpack_error = $3, updated_at = now() WHERE id = $1
)sql"};

constexpr pg::statement container_result_sql{"ingestd_unpack_result", R"sql(
UPDATE ingestion SET structured_data = $2::jsonb, valid_structured_data = $3::boolean WHERE id = $1
)sql"};

/// The statements between BEGIN and COMMIT; an error leaves the caller to roll back.
result<unpack_counts> write(pg::connection& conn, bool via_outbox, const work_outcome& outcome,
                            const unpack_completion& c) {
  auto& ref = outcome.ref;
  auto locked = conn.exec(lock_parent_sql, {ref.item.str(), ref.token.str()});
  if (!locked)
    return locked.error();
  if (locked->size() == 0)
    return pg::claim_lost(ref, "complete_unpack");
  if (locked->boolean(0, 3))
    // Cancelled while it was unpacked: no child is added; the job records the cancellation.
    return error::make_transient(std::string{errc::work_cancelled},
                                 "complete_unpack: the container was cancelled while it ran");
  auto parent_document = locked->str(0, 0);
  auto priority = locked->str(0, 2);

  unpack_counts counts;
  if (!c.children.empty()) {
    std::vector<param> docs, ings, hashes, paths, mimes, names, stages, queues;
    for (auto& child : c.children) {
      docs.emplace_back(child.document_id.str());
      ings.emplace_back(child.ingestion_id.str());
      hashes.emplace_back(child.content_hash);
      paths.emplace_back(child.file_path);
      mimes.emplace_back(child.mime_type);
      names.push_back(pg::clean(child.member_name));
      stages.emplace_back(child.stage);
      queues.emplace_back(child.queue);
    }
    auto res = conn.exec(children_sql, {pg::array_literal(docs), pg::array_literal(ings),
                                        pg::array_literal(hashes), pg::array_literal(paths),
                                        pg::array_literal(mimes), pg::array_literal(names),
                                        pg::array_literal(stages), pg::array_literal(queues),
                                        ref.item.str(), priority, via_outbox ? "t" : "f"});
    if (!res)
      return res.error();
    counts.created = static_cast<int>(res->i64(0, 0));
    counts.known = static_cast<int>(c.children.size()) - counts.created;
  }
  if (auto r = conn.exec(
          parent_sql, {parent_document, pg::opt_clean(c.body_text), pg::opt_clean(c.unpack_error)});
      !r)
    return r.error();
  auto data = c.structured_data.empty() || !pg::valid_json(c.structured_data) ? std::string{"{}"}
                                                                              : c.structured_data;
  if (auto r
      = conn.exec(container_result_sql, {ref.item.str(), data, c.unpack_error.empty() ? "t" : "f"});
      !r)
    return r.error();
  auto finished = pg::finish_work(conn, {&outcome}, via_outbox);
  if (!finished)
    return finished.error();
  if (!finished->front())
    return finished->front().error();
  return counts;
}

} // namespace

pg_container_repository::pg_container_repository(std::string database_url,
                                                 const pg_container_options& opts)
    : via_outbox_(opts.via_outbox),
      pool_(std::make_shared<pg::pool>(
          std::move(database_url),
          pg::pool_options{opts.pool_size, "ingestd-unpack", opts.session})) {}

pg_container_repository::~pg_container_repository() = default;

void pg_container_repository::load(uuid ingestion_id, callback<container_details> done) {
  pool_->call(std::move(done), [ingestion_id](pg::connection& conn, const auto& done) {
    auto res = conn.exec(container_load_sql, {ingestion_id.str()});
    if (!res)
      return done(res.error());
    if (res->size() == 0)
      return done(error::make_permanent("unpack.unknown", "no ingestion " + ingestion_id.str()));
    done(container_details{res->str(0, 0), res->str(0, 1), static_cast<int32_t>(res->i64(0, 2))});
  });
}

void pg_container_repository::complete_unpack(work_outcome outcome, unpack_completion completion,
                                              callback<unpack_counts> done) {
  pool_->call(std::move(done), [outcome = std::move(outcome), c = std::move(completion),
                                via_outbox = via_outbox_](pg::connection& conn, const auto& done) {
    done(pg::transaction<unpack_counts>(
        conn, [&](pg::connection& cn) { return write(cn, via_outbox, outcome, c); },
        [&](pg::connection& cn, result<unpack_counts> written,
            const error& lost) -> result<unpack_counts> {
          // The COMMIT's answer was lost: completed is ours; still ours and in progress means
          // not applied.
          auto states = pg::reread_items(cn, {outcome.ref.item});
          if (!states)
            return lost;
          if (auto s = pg::settled(states->front(), outcome.ref, lost); !s)
            return s.error();
          return written;
        }));
  });
}

} // namespace ingestd
