// pg_repository: the fenced claim, the writes that carry its token, the heartbeat's lease renewal,
// the audit trail and the sweeper's rescue, as prepared statements.
#include "adapters/db/pg_repository.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "adapters/db/pg_batch.hpp"
#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_values.hpp"

namespace ingestd {

namespace {

using pg::clean;
using pg::opt_clean;
using pg::opt_text;
using pg::param;
using pg::parse_uuid;
using pg::valid_json;

// -- statements ------------------------------------------------------------------------------
// Every statement takes its values as parameters; batches arrive as arrays and are unnested.

// Seed 000's conditional claim made fenced: the token and lease are the lock; a lease that has
// run out (the holder crashed) is reclaimable. Joined with the document in the same round trip.
// Batch statements lock their rows in id order (the `lock` CTEs) so that two batches over
// overlapping ingestions (a duplicate delivery, the heartbeat beside a completion) wait for each
// other instead of deadlocking.
//
// Crashes count. Every deliberate end of a claim clears its token (complete, record_failure,
// release: a give-back at shutdown, on a lost heartbeat or for work never started), so a token
// still set on an expired lease means its holder died without an outcome (a decoder crash, the
// OOM killer, kill -9). Taking such a claim over counts that attempt; the crash that reaches the
// request's max_attempts ($5) fails the ingestion with class `poison` instead of claiming it (the
// trigger flags the document for review; the answer says so, for the claimer to notify), so a
// document that kills its worker cannot loop. Both leave an audit event. Every in-progress row
// asked for, claimable or not, records that its message was seen (message_seen_at: see the
// sweeper's statement).
constexpr pg::statement claim_sql{"ingestd_claim", R"sql(
WITH req AS (
  SELECT DISTINCT ON (r.id) r.id, r.token, greatest(r.max_attempts, 1) AS max_attempts,
         r.escalates
    FROM unnest($1::uuid[], $2::uuid[], $5::integer[], $6::boolean[])
         AS r(id, token, max_attempts, escalates)
   ORDER BY r.id
), lock AS (
  SELECT i.id, req.token, req.max_attempts, req.escalates,
         i.claim_token IS NULL OR i.lease_expires_at IS NULL OR i.lease_expires_at < now()
           AS claimable,
         i.claim_token IS NOT NULL AND (i.lease_expires_at IS NULL OR i.lease_expires_at < now())
           AS crashed,
         i.claim_token IS NOT NULL AND (i.lease_expires_at IS NULL OR i.lease_expires_at < now())
           AND i.attempt_count + 1 >= req.max_attempts AND NOT k.known AS poison,
         (i.claim_token IS NULL OR i.lease_expires_at IS NULL OR i.lease_expires_at < now())
           AND k.known AS skip
    FROM ingestion AS i JOIN req ON req.id = i.id
    JOIN document AS d ON d.id = i.document_id
   CROSS JOIN LATERAL (
     SELECT EXISTS (SELECT 1 FROM known_file AS kf WHERE kf.hash = d.content_hash)
            OR EXISTS (SELECT 1 FROM known_file AS kf WHERE kf.hash = d.content_md5) AS known
   ) AS k
   WHERE i.status = 'in-progress'
   ORDER BY i.id
   FOR UPDATE OF i
), changed AS (
  UPDATE ingestion AS i
     SET message_seen_at = now(),
         attempt_count = i.attempt_count + CASE WHEN lock.crashed AND NOT lock.skip THEN 1 ELSE 0 END,
         status = CASE WHEN lock.skip THEN 'skipped' WHEN lock.poison THEN 'failed' ELSE i.status END,
         skip_reason = CASE WHEN lock.skip THEN 'known_file' ELSE i.skip_reason END,
         completed_at = CASE WHEN lock.poison OR lock.skip THEN now() ELSE i.completed_at END,
         valid_structured_data = CASE WHEN lock.poison THEN false ELSE i.valid_structured_data END,
         last_error = CASE WHEN lock.skip THEN i.last_error
                           WHEN lock.crashed
                           THEN CASE WHEN lock.poison THEN 'poison: ' ELSE 'worker.crash: ' END
                                || 'the claim of ' || coalesce(i.claimed_by, 'a worker')
                                || ' expired without an outcome or give-back (attempt '
                                || (i.attempt_count + 1) || ' of ' || lock.max_attempts || ')'
                           ELSE i.last_error END,
         error_class = CASE WHEN lock.poison THEN 'poison' ELSE i.error_class END,
         -- Size classes (migration 011): a crash moves a small ingestion to the large class.
         size_class = CASE WHEN lock.crashed AND lock.escalates AND NOT lock.poison
                           THEN 'large' ELSE i.size_class END,
         class_attempts_base = CASE WHEN lock.crashed AND lock.escalates AND NOT lock.poison
                                         AND i.size_class = 'small'
                                    THEN i.attempt_count + 1 ELSE i.class_attempts_base END,
         claim_token = CASE WHEN lock.poison OR lock.skip THEN NULL
                            WHEN lock.claimable THEN lock.token ELSE i.claim_token END,
         claimed_by = CASE WHEN lock.claimable AND NOT lock.poison THEN $3 ELSE i.claimed_by END,
         started_at = CASE WHEN lock.claimable AND NOT lock.poison THEN now() ELSE i.started_at END,
         lease_expires_at = CASE WHEN lock.poison OR lock.skip THEN NULL
                                 WHEN lock.claimable
                                 THEN now() + make_interval(secs => $4::double precision)
                                 ELSE i.lease_expires_at END
    FROM lock
   WHERE i.id = lock.id AND i.status = 'in-progress'
  RETURNING i.id, i.document_id, i.claim_token, i.attempt_count, i.transcription_file_path,
            lock.claimable AND NOT lock.poison AND NOT lock.skip AS granted, lock.crashed,
            lock.poison, lock.skip, i.last_error, i.size_class, i.class_attempts_base,
            i.transcription_provider, i.extraction_provider
), audit AS (
  INSERT INTO ingestion_event (ingestion_id, step, outcome, detail, worker_id)
  SELECT c.id, 'claim',
         CASE WHEN c.skip THEN 'skipped' WHEN c.poison THEN 'poison' ELSE 'crash' END,
         CASE WHEN c.skip THEN 'known_file: its hash is in the known-file set' ELSE c.last_error END,
         $3
    FROM changed AS c
   WHERE c.crashed OR c.skip
)
SELECT c.id, c.document_id, d.tenant_id, c.claim_token, c.attempt_count, d.file_path,
       d.mime_type, c.transcription_file_path, c.poison, c.skip, c.size_class, c.class_attempts_base,
       COALESCE(c.transcription_provider, ''), COALESCE(c.extraction_provider, '')
  FROM changed AS c
  JOIN document AS d ON d.id = c.document_id
 WHERE c.granted OR c.poison OR c.skip
)sql"};

// Where each ingestion stands, in request order; a missing row is an unknown id.
constexpr pg::statement states_sql{"ingestd_states", R"sql(
SELECT r.ord, i.status, i.claim_token IS NOT NULL AND i.lease_expires_at >= now()
  FROM unnest($1::uuid[]) WITH ORDINALITY AS r(id, ord)
  LEFT JOIN ingestion AS i ON i.id = r.id
 ORDER BY r.ord
)sql"};

// Fenced per row: a row whose claim token no longer matches is not updated and not returned.
constexpr pg::statement transcription_sql{"ingestd_record_transcriptions", R"sql(
WITH r AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::numeric[])
           AS r(id, token, path, preprocessed, score)
), lock AS (
  SELECT i.id FROM ingestion AS i JOIN r ON r.id = i.id AND r.token = i.claim_token
   WHERE i.status = 'in-progress'
   ORDER BY i.id
   FOR UPDATE OF i
)
UPDATE ingestion AS i
   SET transcription_file_path = r.path,
       preprocessed_file_path = r.preprocessed,
       transcription_quality_score = r.score
  FROM r
 WHERE i.id = r.id AND i.claim_token = r.token AND i.status = 'in-progress'
   AND i.id IN (SELECT id FROM lock)
RETURNING i.id, i.claim_token
)sql"};

// Seed 000 step 10 for a batch; the trigger copies the result to each document. When a stage
// follows ingestion ($8: its queue), the same statement (one transaction) makes each completed
// document's next job: its matching_status pending, and the message: a queue_message row on the
// Postgres queue, or ($9) an outbox row the relay sends to SQS. Nothing is created for an
// ingestion that did not complete, and nothing is lost between the two.
constexpr pg::statement complete_sql{"ingestd_complete", R"sql(
WITH c AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::boolean[], $5::integer[],
                       $6::integer[], $7::text[], $10::text[])
           AS c(id, token, data, valid, input_tokens, output_tokens, model, review)
), lock AS (
  SELECT i.id FROM ingestion AS i JOIN c ON c.id = i.id AND c.token = i.claim_token
   WHERE i.status = 'in-progress'
   ORDER BY i.id
   FOR UPDATE OF i
), done AS (
UPDATE ingestion AS i
   SET status = 'completed',
       structured_data = c.data::jsonb,
       valid_structured_data = c.valid,
       extraction_input_tokens = c.input_tokens,
       extraction_output_tokens = c.output_tokens,
       extraction_model = c.model,
       last_error = COALESCE(c.review, i.last_error),
       completed_at = now(),
       claim_token = NULL,
       lease_expires_at = NULL
  FROM c
 WHERE i.id = c.id AND i.claim_token = c.token AND i.status = 'in-progress'
   AND i.id IN (SELECT id FROM lock)
RETURNING i.id, c.token, i.document_id
), next_job AS (
UPDATE document AS d
   SET matching_status = 'pending', matching_error = NULL, matching_attempts = 0,
       matching_failed_at = NULL, matching_claim_token = NULL, matching_claimed_by = NULL,
       matching_lease_expires_at = NULL, matching_message_seen_at = now()
  FROM (SELECT DISTINCT document_id FROM done) AS n
 WHERE d.id = n.document_id AND $8::text IS NOT NULL
RETURNING d.id
), queued AS (
INSERT INTO queue_message (id, queue_name, body)
SELECT gen_random_uuid(), $8::text, next_job.id::text FROM next_job WHERE NOT $9::boolean
), outboxed AS (
INSERT INTO event_outbox (destination, body)
SELECT $8::text, next_job.id::text FROM next_job WHERE $9::boolean
)
SELECT id, token FROM done
)sql"};

// Seed 000's failure CASE update, fenced: a permanent error ($3) fails at once; otherwise the
// attempt that reaches max_attempts ($4) does. The claim is cleared so that the next delivery
// claims at once, and due_at says when that delivery is expected.
constexpr pg::statement failure_sql{"ingestd_record_failure", R"sql(
UPDATE ingestion
   SET attempt_count = attempt_count + 1,
       status = CASE WHEN NOT $9::boolean AND ($3::boolean OR attempt_count + 1 >= $4::integer)
                     THEN 'failed' ELSE status END,
       completed_at = CASE WHEN NOT $9::boolean AND ($3::boolean OR attempt_count + 1 >= $4::integer)
                           THEN now() ELSE completed_at END,
       structured_data = COALESCE($7::jsonb, structured_data),
       valid_structured_data = false,
       last_error = $5,
       error_class = $6,
       claim_token = NULL,
       lease_expires_at = NULL,
       due_at = CASE WHEN NOT $9::boolean AND ($3::boolean OR attempt_count + 1 >= $4::integer)
                     THEN due_at ELSE now() + make_interval(secs => $8::double precision) END,
       -- Size classes (migration 011): the small class gives up on it ($9, never with $3 set).
       size_class = CASE WHEN $9::boolean THEN 'large' ELSE size_class END,
       class_attempts_base = CASE WHEN $9::boolean THEN attempt_count + 1 ELSE class_attempts_base END
 WHERE id = $1 AND claim_token = $2 AND status = 'in-progress'
RETURNING attempt_count, status
)sql"};

// One statement for the heartbeat's whole batch; answers the claims that were lost. The heartbeat
// extends the message's visibility at the same tick: the message is seen.
constexpr pg::statement renew_sql{"ingestd_renew_leases", R"sql(
WITH r AS (
  SELECT r.id, r.token FROM unnest($1::uuid[], $2::uuid[]) AS r(id, token)
), lock AS (
  SELECT i.id, i.claim_token FROM ingestion AS i JOIN r ON r.id = i.id AND r.token = i.claim_token
   WHERE i.status = 'in-progress'
   ORDER BY i.id
   FOR UPDATE OF i
), renewed AS (
  UPDATE ingestion AS i
     SET lease_expires_at = now() + make_interval(secs => $3::double precision),
         message_seen_at = now()
    FROM lock
   WHERE i.id = lock.id AND i.claim_token = lock.claim_token AND i.status = 'in-progress'
  RETURNING i.id, i.claim_token
)
SELECT r.id, r.token FROM r
 WHERE NOT EXISTS (SELECT 1 FROM renewed AS n WHERE n.id = r.id AND n.claim_token = r.token)
)sql"};

// A give-back: the cleared token records it (the next claim counts no crash), and the message,
// made visible again by the caller, is seen.
constexpr pg::statement release_sql{"ingestd_release", R"sql(
UPDATE ingestion
   SET claim_token = NULL, lease_expires_at = NULL, due_at = now(), message_seen_at = now()
 WHERE id = $1 AND claim_token = $2 AND status = 'in-progress'
)sql"};

// Cancellation (migration 010): the heartbeat's look-up of its claims' cancel requests, and the
// fenced end of a running ingestion that was cancelled.
constexpr pg::statement cancel_requests_sql{"ingestd_cancel_requests", R"sql(
SELECT i.id FROM ingestion AS i
 WHERE i.id = ANY($1::uuid[]) AND i.cancel_requested_at IS NOT NULL AND i.status = 'in-progress'
)sql"};

constexpr pg::statement record_cancelled_sql{"ingestd_record_cancelled", R"sql(
UPDATE ingestion
   SET status = 'cancelled', completed_at = now(), claim_token = NULL, lease_expires_at = NULL,
       last_error = 'cancelled', message_seen_at = now()
 WHERE id = $1 AND claim_token = $2 AND status = 'in-progress'
)sql"};

constexpr pg::statement events_sql{"ingestd_append_events", R"sql(
INSERT INTO ingestion_event (ingestion_id, step, outcome, detail, duration_ms, worker_id, at)
SELECT e.ingestion_id, e.step, e.outcome, e.detail, e.duration_ms, e.worker_id,
       CASE WHEN e.at_ms > 0 THEN to_timestamp(e.at_ms / 1000.0) ELSE now() END
  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[],
              $7::bigint[]) AS e(ingestion_id, step, outcome, detail, duration_ms, worker_id, at_ms)
)sql"};

// The sweeper's net, one per cluster: the transaction-scoped advisory lock (keyed by the schema,
// which is the cluster's namespace) lets one of several concurrent sweepers through.
//
// It rescues only ingestions that truly have no message; re-enqueueing one that merely waits in
// a backlog would duplicate it at every sweep. Nobody holds it (no live lease), it is past due
// (a transient failure's back-off has run out) and no message exists:
// - Postgres queue: every message is a row of queue_message until it is deleted, visible or
//   not, in the ingestion queue or a dead-letter queue (any queue_name). The anti-join is exact.
//   (With SQS the table is empty and the condition holds.)
// - SQS: the database cannot look into the queue, so message_seen_at stands in. Each receive
//   refreshes it (the claim, granted or not), so does each visibility extension (the lease
//   renewal) and each give-back, and the rescue re-enqueue and the intake's insert set it. The
//   caller passes a threshold longer than any invisibility the queue gives a message (receive
//   visibility, heartbeat extension; a back-off is covered by due_at), so a message that was
//   received and still exists has been seen within it. A message that waits unreceived in a
//   backlog is never seen: the sweeper does not sweep while the queue reports visible or delayed
//   messages (actors/sweeper.cpp).
// A failed ingestion, poison included, is never in progress again: nothing revives it. An unpack
// ingestion (a container) belongs to the unpack stage's queue, never to this one.
constexpr pg::statement rescue_sql{"ingestd_rescue_stranded", R"sql(
WITH lock AS (
  SELECT pg_try_advisory_xact_lock(1769104, hashtext(current_schema())) AS held
), stranded AS (
  SELECT i.id FROM ingestion AS i
   WHERE (SELECT held FROM lock)
     AND i.status = 'in-progress'
     AND i.stage = 'ingest'
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
RETURNING i.id, i.size_class, i.priority
)sql"};

// -- helpers ---------------------------------------------------------------------------------

std::string uuids(const std::vector<uuid>& ids) {
  std::vector<param> items;
  items.reserve(ids.size());
  for (auto& id : ids)
    items.emplace_back(id.str());
  return pg::array_literal(items);
}

int32_t clamp_i32(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, 0, INT32_MAX));
}

constexpr pg::statement reread_sql{"ingestd_reread_completions", R"sql(
SELECT r.ord, i.status, i.claim_token
  FROM unnest($1::uuid[]) WITH ORDINALITY AS r(id, ord)
  LEFT JOIN ingestion AS i ON i.id = r.id
 ORDER BY r.ord
)sql"};

/// After a completion whose outcome is unknown: (status, claim_token) per id, on a fresh
/// connection; nullopt when the database cannot be read either.
std::optional<std::vector<std::pair<std::string, std::string>>>
reread_completions(pg::connection& conn, const std::vector<uuid>& ids) {
  if (!conn.ensure(true))
    return std::nullopt;
  auto res = conn.exec(reread_sql, {uuids(ids)});
  if (!res)
    return std::nullopt;
  std::vector<std::pair<std::string, std::string>> out(ids.size());
  for (int r = 0; r < res->size(); ++r) {
    auto index = res->i64(r, 0) - 1;
    if (index >= 0 && index < static_cast<int64_t>(out.size()))
      out[index] = {res->str(r, 1), res->str(r, 2)};
  }
  return out;
}

error claim_lost(const lease_ref& ref, std::string_view what) {
  return error::make_claim_lost(std::string{what} + ": ingestion " + ref.ingestion_id.str()
                                + " is no longer held by claim " + ref.claim_token.str());
}

/// One complete statement over `batch`: a result per completion, or the statement's error when
/// PostgreSQL refused it outright.
result<std::vector<result<void>>> complete_batch(pg::connection& conn,
                                                 const std::vector<const completion*>& batch,
                                                 const next_job_options& next) {
  std::vector<param> ids, tokens, data, valid, in_tok, out_tok, model, review;
  for (auto* c : batch) {
    ids.emplace_back(c->ref.ingestion_id.str());
    tokens.emplace_back(c->ref.claim_token.str());
    data.push_back(opt_text(c->record.structured_data)); // cleaned by the caller
    // A completion with a reason for review is never valid as it stands.
    valid.emplace_back(c->record.valid_structured_data && c->record.review_reason.empty() ? "t" : "f");
    in_tok.emplace_back(std::to_string(clamp_i32(c->record.input_tokens)));
    out_tok.emplace_back(std::to_string(clamp_i32(c->record.output_tokens)));
    model.push_back(opt_clean(c->record.model));
    review.push_back(opt_clean(c->record.review_reason));
  }
  auto res = conn.exec(complete_sql,
                       {pg::array_literal(ids), pg::array_literal(tokens), pg::array_literal(data),
                        pg::array_literal(valid), pg::array_literal(in_tok),
                        pg::array_literal(out_tok), pg::array_literal(model),
                        next.queue.empty() ? param{} : param{next.queue},
                        next.via_outbox ? "t" : "f", pg::array_literal(review)});
  if (!res) {
    if (!database_unavailable(res.error()) && res.error().code != "pg.08007")
      return res.error();
    // The connection broke (or 08007): the commit may or may not have happened. Re-read
    // instead of redoing, so the caller learns which completions are final.
    std::vector<uuid> sent_ids;
    sent_ids.reserve(batch.size());
    for (auto* c : batch)
      sent_ids.push_back(c->ref.ingestion_id);
    auto reread = reread_completions(conn, sent_ids);
    std::vector<result<void>> out;
    for (size_t k = 0; k < batch.size(); ++k) {
      if (!reread) {
        out.emplace_back(res.error());
        continue;
      }
      auto& [status, token] = (*reread)[k];
      if (status == "completed")
        out.emplace_back(); // Final; nothing to redo.
      else if (status == "in-progress" && token == batch[k]->ref.claim_token.str())
        out.emplace_back(res.error()); // Not applied and still ours: retrying is safe.
      else
        out.emplace_back(claim_lost(batch[k]->ref, "complete"));
    }
    return out;
  }
  // Matched by id and token: a batch may carry the same id with a stale and a live token.
  std::set<std::pair<uuid, uuid>> updated;
  for (int r = 0; r < res->size(); ++r)
    updated.emplace(parse_uuid(res->text(r, 0)), parse_uuid(res->text(r, 1)));
  std::vector<result<void>> out;
  for (auto* c : batch) {
    if (updated.erase({c->ref.ingestion_id, c->ref.claim_token}) == 0)
      out.emplace_back(claim_lost(c->ref, "complete"));
    else
      out.emplace_back();
  }
  return out;
}

} // namespace

pg_repository::pg_repository(std::string database_url, const pg_repository_options& opts)
  : next_job_(opts.next_job), pool_(std::make_unique<pg::pool>(std::move(database_url),
                                     pg::pool_options{opts.pool_size, "ingestd-db", opts.session})) {
}

pg_repository::~pg_repository() = default;

void pg_repository::claim(std::vector<claim_request> requests, std::string worker_id,
                          std::chrono::seconds lease,
                          callback<std::vector<std::optional<claimed_ingestion>>> done) {
  pool_->call(std::move(done), [requests = std::move(requests), worker_id = std::move(worker_id),
                                lease](pg::connection& conn, const auto& done) {
    std::vector<std::optional<claimed_ingestion>> out(requests.size());
    if (requests.empty())
      return done(std::move(out));
    std::vector<uuid> ids, tokens;
    std::vector<param> max_attempts, escalates;
    for (auto& r : requests) {
      ids.push_back(r.ingestion_id);
      tokens.push_back(r.claim_token);
      max_attempts.emplace_back(std::to_string(r.max_attempts));
      escalates.emplace_back(r.crash_escalates ? "t" : "f");
    }
    auto res = conn.exec(claim_sql, {uuids(ids), uuids(tokens), worker_id,
                                     std::to_string(lease.count()),
                                     pg::array_literal(max_attempts), pg::array_literal(escalates)});
    if (!res)
      return done(res.error());
    auto& rows = *res;
    for (int r = 0; r < rows.size(); ++r) {
      claimed_ingestion c;
      c.ingestion_id = parse_uuid(rows.text(r, 0));
      c.document_id = parse_uuid(rows.text(r, 1));
      c.tenant_id = parse_uuid(rows.text(r, 2));
      c.claim_token = parse_uuid(rows.text(r, 3));
      c.attempt_count = static_cast<int32_t>(rows.i64(r, 4));
      c.file_path = rows.str(r, 5);
      c.mime_type = rows.str(r, 6);
      c.transcription_file_path = rows.str(r, 7);
      c.poisoned = rows.boolean(r, 8);
      c.skipped = rows.boolean(r, 9);
      c.size_class = rows.str(r, 10);
      c.class_attempts_base = static_cast<int32_t>(rows.i64(r, 11));
      c.transcription_provider = rows.str(r, 12);
      c.extraction_provider = rows.str(r, 13);
      // The request that won is the one whose token was stored (an id requested twice in one
      // batch is claimed once); failed as poison, none was stored: the first request for it.
      for (size_t i = 0; i < requests.size(); ++i) {
        if (requests[i].ingestion_id == c.ingestion_id
            && (c.poisoned || c.skipped || requests[i].claim_token == c.claim_token) && !out[i]) {
          out[i] = c;
          break;
        }
      }
    }
    done(std::move(out));
  });
}

void pg_repository::states(std::vector<uuid> ids,
                           callback<std::vector<ingestion_state>> done) {
  pool_->call(std::move(done), [ids = std::move(ids)](pg::connection& conn, const auto& done) {
    std::vector<ingestion_state> out(ids.size(), ingestion_state::unknown);
    if (ids.empty())
      return done(std::move(out));
    auto res = conn.exec(states_sql, {uuids(ids)});
    if (!res)
      return done(res.error());
    for (int r = 0; r < res->size(); ++r) {
      auto index = res->i64(r, 0) - 1;
      if (index < 0 || index >= static_cast<int64_t>(out.size()) || res->is_null(r, 1))
        continue;
      auto status = res->text(r, 1);
      if (status == "completed")
        out[index] = ingestion_state::completed;
      else if (status == "failed")
        out[index] = ingestion_state::failed;
      else if (status == "skipped")
        out[index] = ingestion_state::skipped;
      else if (status == "cancelled")
        out[index] = ingestion_state::cancelled;
      else
        out[index] = res->boolean(r, 2) ? ingestion_state::held : ingestion_state::claimable;
    }
    done(std::move(out));
  });
}

void pg_repository::record_transcription(lease_ref ref, transcription_record record,
                                         callback<void> done) {
  if (transcriptions_->waiting.push({ref, std::move(record), std::move(done)}))
    pg::submit_coalesced(*pool_, transcriptions_->waiting,
                         [this](pg::connection& conn, std::vector<pending_transcription>& batch) {
                           record_transcriptions(conn, batch);
                         });
}

void pg_repository::record_transcriptions(pg::connection& conn,
                                          std::vector<pending_transcription>& batch) {
  // Paths are storage keys, sent as they are: a key that cleaning changed would name nothing.
  auto answers = pg::run_batch<void>(batch.size(), [&](const std::vector<size_t>& items)
                                                     -> result<std::vector<result<void>>> {
    std::vector<param> ids, tokens, paths, preprocessed, scores;
    for (auto i : items) {
      auto& p = batch[i];
      ids.emplace_back(p.ref.ingestion_id.str());
      tokens.emplace_back(p.ref.claim_token.str());
      paths.emplace_back(p.record.transcription_file_path);
      preprocessed.push_back(opt_text(p.record.preprocessed_file_path));
      scores.emplace_back(std::to_string(p.record.quality_score));
    }
    auto res = conn.exec(transcription_sql, {pg::array_literal(ids), pg::array_literal(tokens), pg::array_literal(paths),
                                             pg::array_literal(preprocessed), pg::array_literal(scores)});
    ++transcriptions_->statements;
    if (!res)
      return res.error();
    std::set<std::pair<std::string, std::string>> updated;
    for (int r = 0; r < res->size(); ++r)
      updated.emplace(res->str(r, 0), res->str(r, 1));
    std::vector<result<void>> out;
    for (auto i : items) {
      auto& ref = batch[i].ref;
      if (updated.count({ref.ingestion_id.str(), ref.claim_token.str()}) == 0)
        out.emplace_back(claim_lost(ref, "record_transcription"));
      else
        out.emplace_back();
    }
    return out;
  });
  for (size_t i = 0; i < batch.size(); ++i)
    batch[i].done(std::move(answers[i]));
}

uint64_t pg_repository::transcription_statements() const {
  return transcriptions_->statements.load();
}

void pg_repository::complete(std::vector<completion> completions,
                             callback<std::vector<result<void>>> done) {
  pool_->call(std::move(done), [next = next_job_, completions = std::move(completions)](
                                   pg::connection& conn, const auto& done) mutable {
    std::vector<result<void>> out(completions.size());
    std::vector<size_t> sent;
    for (size_t i = 0; i < completions.size(); ++i) {
      auto& rec = completions[i].record;
      rec.structured_data = clean_json(rec.structured_data);
      if (!rec.structured_data.empty() && !valid_json(rec.structured_data)) {
        out[i] = error::make_permanent("pg.invalid_json",
                                       "structured_data is not valid JSON for ingestion "
                                         + completions[i].ref.ingestion_id.str());
        continue;
      }
      sent.push_back(i);
    }
    if (sent.empty())
      return done(std::move(out));
    auto answers = pg::run_batch<void>(sent.size(), [&](const std::vector<size_t>& items) {
      std::vector<const completion*> batch;
      batch.reserve(items.size());
      for (auto k : items)
        batch.push_back(&completions[sent[k]]);
      return complete_batch(conn, batch, next);
    });
    for (size_t k = 0; k < sent.size(); ++k)
      out[sent[k]] = std::move(answers[k]);
    done(std::move(out));
  });
}

void pg_repository::record_failure(lease_ref ref, failure_record record,
                                   std::chrono::seconds retry_delay,
                                   callback<failure_outcome> done) {
  pool_->call(std::move(done), [ref, record = std::move(record), retry_delay](pg::connection& conn,
                                                                              const auto& done) {
    // Output kept for the reviewer must not make the failure itself unrecordable.
    param data;
    if (auto json = clean_json(record.structured_data); !json.empty() && valid_json(json))
      data = std::move(json);
    auto max_attempts = std::max<int32_t>(record.max_attempts, 1);
    auto res = conn.exec(failure_sql,
                         {ref.ingestion_id.str(), ref.claim_token.str(),
                          record.error.permanent() && !record.escalate ? "t" : "f",
                          std::to_string(max_attempts), clean(record.error.describe()),
                          std::string{to_string(record.error.cls)}, data,
                          std::to_string(std::max<int64_t>(retry_delay.count(), 0)),
                          record.escalate ? "t" : "f"});
    if (!res)
      return done(res.error());
    if (res->size() == 0)
      return done(claim_lost(ref, "record_failure"));
    failure_outcome outcome;
    outcome.attempt_count = static_cast<int32_t>(res->i64(0, 0));
    outcome.failed = res->text(0, 1) == "failed";
    done(outcome);
  });
}

void pg_repository::renew_leases(std::vector<lease_ref> refs, std::chrono::seconds lease,
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
    auto res = conn.exec(renew_sql, {uuids(ids), uuids(tokens), std::to_string(lease.count())});
    if (!res)
      return done(res.error());
    std::vector<lease_ref> lost;
    lost.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      lost.push_back(lease_ref{parse_uuid(res->text(r, 0)), parse_uuid(res->text(r, 1))});
    done(std::move(lost));
  });
}

void pg_repository::release(lease_ref ref, callback<void> done) {
  pool_->call(std::move(done), [ref](pg::connection& conn, const auto& done) {
    auto res = conn.exec(release_sql, {ref.ingestion_id.str(), ref.claim_token.str()});
    if (!res)
      return done(res.error());
    if (res->affected() == 0)
      return done(claim_lost(ref, "release"));
    done(result<void>{});
  });
}

void pg_repository::cancel_requests(std::vector<uuid> ids, callback<std::vector<uuid>> done) {
  pool_->call(std::move(done), [ids = std::move(ids)](pg::connection& conn, const auto& done) {
    std::vector<uuid> out;
    if (ids.empty())
      return done(std::move(out));
    auto res = conn.exec(cancel_requests_sql, {uuids(ids)});
    if (!res)
      return done(res.error());
    for (int r = 0; r < res->size(); ++r)
      if (auto id = uuid::parse(res->str(r, 0)))
        out.push_back(*id);
    done(std::move(out));
  });
}

void pg_repository::record_cancelled(lease_ref ref, callback<void> done) {
  pool_->call(std::move(done), [ref](pg::connection& conn, const auto& done) {
    auto res = conn.exec(record_cancelled_sql, {ref.ingestion_id.str(), ref.claim_token.str()});
    if (!res)
      return done(res.error());
    if (res->affected() == 0)
      return done(claim_lost(ref, "record_cancelled"));
    done(result<void>{});
  });
}

void pg_repository::append_events(std::vector<audit_event> events, callback<void> done) {
  append_events_each(std::move(events),
                     [done = std::move(done)](result<std::vector<result<void>>> r) {
                       done(r ? all_stored(*r) : result<void>{r.error()});
                     });
}

void pg_repository::append_events_each(std::vector<audit_event> events,
                                       callback<std::vector<result<void>>> done) {
  pool_->call(std::move(done), [events = std::move(events)](pg::connection& conn,
                                                            const auto& done) {
    if (events.empty())
      return done(std::vector<result<void>>{});
    done(pg::run_batch<void>(events.size(), [&](const std::vector<size_t>& items)
                                                -> result<std::vector<result<void>>> {
      std::vector<param> ids, steps, outcomes, details, durations, workers, ats;
      for (auto i : items) {
        auto& e = events[i];
        ids.emplace_back(e.ingestion_id.str());
        steps.push_back(clean(e.step));
        outcomes.push_back(clean(e.outcome));
        details.push_back(opt_clean(e.detail));
        durations.emplace_back(std::to_string(e.duration_ms));
        workers.push_back(opt_clean(e.worker_id));
        ats.emplace_back(std::to_string(e.at_ms));
      }
      auto res = conn.exec(events_sql,
                           {pg::array_literal(ids), pg::array_literal(steps),
                            pg::array_literal(outcomes), pg::array_literal(details),
                            pg::array_literal(durations), pg::array_literal(workers),
                            pg::array_literal(ats)});
      if (!res)
        return res.error();
      return std::vector<result<void>>(items.size());
    }));
  });
}

void pg_repository::rescue_stranded(std::chrono::seconds stale_threshold, int limit,
                                    callback<std::vector<stranded_ingestion>> done) {
  pool_->call(std::move(done), [stale_threshold, limit](pg::connection& conn, const auto& done) {
    auto res = conn.exec(rescue_sql, {std::to_string(std::max<int64_t>(stale_threshold.count(), 0)),
                                      std::to_string(std::max(limit, 0))});
    if (!res)
      return done(res.error());
    std::vector<stranded_ingestion> found;
    found.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      found.push_back({parse_uuid(res->text(r, 0)), res->str(r, 1), static_cast<int32_t>(res->i64(r, 2))});
    done(std::move(found));
  });
}

} // namespace ingestd
