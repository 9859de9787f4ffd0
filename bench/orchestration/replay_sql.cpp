// The pgbench replay's script (replay_sql.hpp).
#include "bench/orchestration/replay_sql.hpp"

#include <cstddef>
#include <regex>
#include <string>
#include <vector>

namespace ingestd::bench {

namespace {

// The statements one job of the ingest stage sends, as the adapters send them (their text in
// adapters/queue/postgres_queue.cpp, adapters/db/pg_work_repository.cpp, pg_ingest_repository.cpp
// and pg_work.cpp), with $n for their parameters; replay_sql() puts pgbench variables in.

// postgres_queue: receive (the node asks for up to 10 per round trip; the replay takes 1, which
// costs the replay more than the node).
constexpr const char* receive_sql = R"sql(
WITH ready AS (
  SELECT id, receive_count, rank FROM queue_message
   WHERE queue_name = $1 AND NOT held AND visible_at <= now()
   ORDER BY rank, id
   LIMIT $2
   FOR UPDATE SKIP LOCKED
), due AS (
  SELECT id, receive_count, rank FROM queue_message
   WHERE queue_name = $1 AND held AND visible_at <= now()
   ORDER BY visible_at
   LIMIT $2
   FOR UPDATE SKIP LOCKED
), picked AS (
  SELECT id, receive_count FROM (SELECT * FROM ready UNION ALL SELECT * FROM due) AS c
   ORDER BY rank, id
   LIMIT $2
), dead AS (
  UPDATE queue_message AS m
     SET queue_name = $5, receipt = NULL, held = false, receive_count = 0, visible_at = now()
    FROM picked AS p
   WHERE m.id = p.id AND $4::integer > 0 AND p.receive_count >= $4::integer
  RETURNING m.id
), got AS (
  UPDATE queue_message AS m
     SET receipt = gen_random_uuid(),
         held = true,
         receive_count = m.receive_count + 1,
         visible_at = now() + make_interval(secs => $3::double precision)
    FROM picked AS p
   WHERE m.id = p.id AND NOT ($4::integer > 0 AND p.receive_count >= $4::integer)
  RETURNING m.id, m.receipt, m.body, m.receive_count, m.sent_at, m.visible_at, m.priority, m.rank
)
SELECT false AS dead, g.id, g.receipt AS receipt, g.body AS body, g.receive_count,
       floor(extract(epoch FROM g.sent_at) * 1000)::bigint, g.priority, g.rank
  FROM got AS g
UNION ALL
SELECT true, d.id, NULL, NULL, 0, 0, 0, 0 FROM dead AS d
ORDER BY 1, 8, 2
)sql";

// pg_work_repository: the claim.
constexpr const char* claim_sql = R"sql(
WITH req AS (
  SELECT DISTINCT ON (r.id) r.id, r.token, r.stage, r.class, greatest(r.max_attempts, 1) AS max_attempts,
         r.skip_known, r.move_class, r.move_queue, r.audit
    FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::integer[], $6::boolean[],
                $7::text[], $8::text[], $9::boolean[]) WITH ORDINALITY
         AS r(id, token, stage, class, max_attempts, skip_known, move_class, move_queue, audit, ord)
   ORDER BY r.id, r.ord
), lock AS (
  SELECT w.id, w.attempt_count, req.token, req.max_attempts, req.move_class, req.move_queue,
         req.audit,
         req.class <> '' AND w.size_class <> req.class AS elsewhere,
         w.claim_token IS NULL OR w.lease_expires_at IS NULL OR w.lease_expires_at < now() AS free,
         w.claim_token IS NOT NULL AND (w.lease_expires_at IS NULL OR w.lease_expires_at < now())
           AS crashed,
         req.skip_known
           AND (EXISTS (SELECT 1 FROM known_file AS k WHERE k.hash = d.content_hash)
                OR EXISTS (SELECT 1 FROM known_file AS k WHERE k.hash = d.content_md5)) AS known
    FROM work_item AS w
    JOIN req ON req.id = w.id AND req.stage = w.stage
    JOIN document AS d ON d.id = w.document_id
   WHERE w.status = 'in-progress'
   ORDER BY w.id
   FOR UPDATE OF w
), decided AS (
  SELECT l.*,
         CASE WHEN l.elsewhere THEN 'moved'
              WHEN NOT l.free THEN 'held'
              WHEN l.known THEN 'skipped'
              WHEN l.crashed AND l.attempt_count + 1 >= l.max_attempts THEN 'poison'
              WHEN l.crashed AND l.move_class <> '' THEN 'move'
              ELSE 'granted' END AS verdict,
         l.crashed AND NOT l.elsewhere AND l.free AND NOT l.known AS crash_counted
    FROM lock AS l
), changed AS (
  UPDATE work_item AS w
     SET message_seen_at = now(),
         attempt_count = w.attempt_count + CASE WHEN d.crash_counted THEN 1 ELSE 0 END,
         crash_count = w.crash_count + CASE WHEN d.crash_counted THEN 1 ELSE 0 END,
         status = CASE d.verdict WHEN 'skipped' THEN 'skipped' WHEN 'poison' THEN 'failed'
                                 ELSE w.status END,
         completed_at = CASE WHEN d.verdict IN ('skipped', 'poison') THEN now() ELSE w.completed_at END,
         last_error = CASE WHEN d.verdict = 'skipped' THEN 'known_file: its hash is in the known-file set'
                           WHEN d.crash_counted
                           THEN CASE WHEN d.verdict = 'poison' THEN 'poison: ' ELSE 'worker.crash: ' END
                                || 'the claim of ' || coalesce(w.claimed_by, 'a worker')
                                || ' expired without an outcome or give-back (attempt '
                                || (w.attempt_count + 1) || ' of ' || d.max_attempts || ')'
                           ELSE w.last_error END,
         error_class = CASE WHEN d.verdict = 'poison' THEN 'poison' ELSE w.error_class END,
         size_class = CASE WHEN d.verdict = 'move' THEN d.move_class ELSE w.size_class END,
         class_attempts_base = CASE WHEN d.verdict = 'move' THEN w.attempt_count + 1
                                    ELSE w.class_attempts_base END,
         claim_token = CASE WHEN d.verdict = 'granted' THEN d.token
                            WHEN d.verdict IN ('skipped', 'poison', 'move') THEN NULL
                            ELSE w.claim_token END,
         claimed_by = CASE WHEN d.verdict = 'granted' THEN $10 ELSE w.claimed_by END,
         started_at = CASE WHEN d.verdict = 'granted' THEN now() ELSE w.started_at END,
         lease_expires_at = CASE WHEN d.verdict = 'granted'
                                 THEN now() + make_interval(secs => $11::double precision)
                                 WHEN d.verdict IN ('skipped', 'poison', 'move') THEN NULL
                                 ELSE w.lease_expires_at END,
         due_at = CASE WHEN d.verdict = 'move' THEN now() ELSE w.due_at END
    FROM decided AS d
   WHERE w.id = d.id
  RETURNING w.id, w.document_id, w.tenant_id, w.claim_token, w.attempt_count, w.priority,
            w.size_class, w.class_attempts_base, w.last_error, d.verdict, d.crash_counted,
            d.move_queue, d.audit
), sent AS (
  SELECT count(ingestd_send(c.move_queue, c.id::text, c.priority, $12::boolean)) AS n
    FROM changed AS c WHERE c.verdict = 'move'
), audit AS (
  INSERT INTO ingestion_event (ingestion_id, step, outcome, detail, worker_id)
  SELECT c.id, 'claim',
         CASE c.verdict WHEN 'skipped' THEN 'skipped' WHEN 'poison' THEN 'poison'
                        WHEN 'move' THEN 'moved' ELSE 'crash' END,
         CASE WHEN c.verdict = 'move' THEN c.last_error || '; moved to the ' || c.size_class || ' class'
              ELSE c.last_error END,
         $10
    FROM changed AS c
   WHERE c.audit AND (c.crash_counted OR c.verdict = 'skipped')
)
SELECT r.ord, COALESCE(c.verdict, CASE WHEN w.id IS NULL THEN 'unknown' ELSE 'finished' END),
       c.document_id, c.tenant_id, c.claim_token AS token, c.attempt_count, c.priority, c.size_class,
       c.class_attempts_base, COALESCE(c.last_error, w.status, ''), (SELECT n FROM sent)
  FROM unnest($1::uuid[], $3::text[]) WITH ORDINALITY AS r(id, stage, ord)
  LEFT JOIN changed AS c ON c.id = r.id
  LEFT JOIN work_item AS w ON w.id = r.id AND w.stage = r.stage
 ORDER BY r.ord
)sql";

// The heartbeat: the message's visibility extended (postgres_queue) and the lease renewed
// (pg_work_repository), each a statement for all of a node's claims at that tick.
constexpr const char* visibility_sql = R"sql(
WITH held AS (
  SELECT m.id, v.secs
    FROM queue_message AS m
    JOIN unnest($2::uuid[], $3::integer[]) AS v(receipt, secs) ON m.receipt = v.receipt
   WHERE m.queue_name = $1
   ORDER BY m.id
   FOR UPDATE OF m
)
UPDATE queue_message AS m
   SET visible_at = now() + make_interval(secs => held.secs)
  FROM held
 WHERE m.id = held.id
RETURNING m.receipt
)sql";

constexpr const char* renew_sql = R"sql(
WITH r AS (
  SELECT r.id, r.token FROM unnest($1::uuid[], $2::uuid[]) AS r(id, token)
), lock AS (
  SELECT w.id, w.claim_token FROM work_item AS w JOIN r ON r.id = w.id AND r.token = w.claim_token
   WHERE w.status = 'in-progress'
   ORDER BY w.id
   FOR UPDATE OF w
), renewed AS (
  UPDATE work_item AS w
     SET lease_expires_at = now() + make_interval(secs => $3::double precision),
         message_seen_at = now()
    FROM lock
   WHERE w.id = lock.id AND w.claim_token = lock.claim_token AND w.status = 'in-progress'
  RETURNING w.id, w.claim_token
)
SELECT r.id, r.token FROM r
 WHERE NOT EXISTS (SELECT 1 FROM renewed AS n WHERE n.id = r.id AND n.claim_token = r.token)
)sql";

// pg_ingest_repository: the load, the transcription, and the completion's transaction (the
// results, then pg_work's finish of the work items with their audit trail and next work).
constexpr const char* load_sql = R"sql(
SELECT r.ord, d.file_path, COALESCE(d.mime_type, ''), COALESCE(i.transcription_file_path, ''),
       COALESCE(i.transcription_provider, ''), COALESCE(i.extraction_provider, '')
  FROM unnest($1::uuid[]) WITH ORDINALITY AS r(id, ord)
  JOIN ingestion AS i ON i.id = r.id
  JOIN document AS d ON d.id = i.document_id
)sql";

constexpr const char* transcription_sql = R"sql(
WITH r AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::numeric[])
           AS r(id, token, path, preprocessed, score)
), held AS (
  SELECT w.id, w.claim_token FROM work_item AS w JOIN r ON r.id = w.id AND r.token = w.claim_token
   WHERE w.status = 'in-progress'
)
UPDATE ingestion AS i
   SET transcription_file_path = r.path,
       preprocessed_file_path = r.preprocessed,
       transcription_quality_score = r.score
  FROM r JOIN held ON held.id = r.id AND held.claim_token = r.token
 WHERE i.id = r.id
RETURNING i.id, r.token
)sql";

constexpr const char* result_sql = R"sql(
WITH c AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::boolean[], $5::integer[],
                       $6::integer[], $7::text[])
           AS c(id, token, data, valid, input_tokens, output_tokens, model)
), lock AS (
  SELECT w.id, w.claim_token FROM work_item AS w JOIN c ON c.id = w.id AND c.token = w.claim_token
   WHERE w.status = 'in-progress'
   ORDER BY w.id
   FOR UPDATE OF w
)
UPDATE ingestion AS i
   SET structured_data = c.data::jsonb,
       valid_structured_data = c.valid,
       extraction_input_tokens = c.input_tokens,
       extraction_output_tokens = c.output_tokens,
       extraction_model = c.model
  FROM c JOIN lock ON lock.id = c.id AND lock.claim_token = c.token
 WHERE i.id = c.id
RETURNING i.id, c.token
)sql";

constexpr const char* finish_sql = R"sql(
WITH c AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $20::text[]) AS c(id, token, remark)
), lock AS (
  SELECT w.id FROM work_item AS w JOIN c ON c.id = w.id AND c.token = w.claim_token
   WHERE w.status = 'in-progress'
   ORDER BY w.id
   FOR UPDATE OF w
), done AS (
  UPDATE work_item AS w
     SET status = 'completed', completed_at = now(), claim_token = NULL, lease_expires_at = NULL,
         last_error = COALESCE(c.remark, w.last_error)
    FROM c
   WHERE w.id = c.id AND w.claim_token = c.token AND w.status = 'in-progress'
     AND w.id IN (SELECT id FROM lock)
  RETURNING w.id, c.token
), next AS (
  SELECT count(*) FILTER (WHERE ingestd_add_work(n.item, n.stage, n.document, n.tenant, n.priority,
                                                 n.class, n.queue, $19::boolean, n.reopen)) AS sent
    FROM unnest($10::uuid[], $11::uuid[], $12::text[], $13::uuid[], $14::uuid[], $15::integer[],
                $16::text[], $17::text[], $18::boolean[])
         AS n(parent, item, stage, document, tenant, priority, class, queue, reopen)
   WHERE n.parent IN (SELECT id FROM done)
), audit AS (
  SELECT ingestd_append_audit($3::uuid[], $4::text[], $5::text[], $6::text[], $7::bigint[],
                              $8::text[], $9::bigint[]) AS appended
)
SELECT d.id, d.token, (SELECT sent FROM next), (SELECT appended FROM audit)
  FROM (SELECT 1) AS one LEFT JOIN done AS d ON true
)sql";

// postgres_queue: the acknowledgement.
constexpr const char* delete_sql = R"sql(
WITH doomed AS (
  SELECT id FROM queue_message
   WHERE queue_name = $1 AND receipt = ANY($2::uuid[])
   ORDER BY id
   FOR UPDATE
)
DELETE FROM queue_message AS m USING doomed WHERE m.id = doomed.id RETURNING m.receipt
)sql";

/// `sql` on one line with its parameters replaced: `args[k]` for $(k+1).
std::string bind(std::string sql, const std::vector<std::string>& args) {
  for (size_t k = args.size(); k-- > 0;)
    sql = std::regex_replace(sql, std::regex{"\\$" + std::to_string(k + 1) + "(?![0-9])"}, args[k]);
  std::string line;
  bool space = false;
  for (char c : sql) {
    bool ws = c == '\n' || c == ' ' || c == '\t';
    if (ws && !line.empty())
      space = true;
    if (ws)
      continue;
    if (space)
      line += ' ';
    space = false;
    line += c;
  }
  return line;
}

} // namespace

replay replay_sql(const std::string& queue, const std::vector<std::string>& audit_steps) {
  std::string q = "'" + queue + "'";
  auto steps = std::string{"ARRAY["};
  for (size_t i = 0; i < audit_steps.size(); ++i)
    steps += (i ? ",'" : "'") + audit_steps[i] + "'";
  steps += "]::text[]";
  auto n = std::to_string(audit_steps.size());
  replay r;
  auto add = [&](const std::string& command, bool gset = false) {
    r.script += command + (gset ? "\n\\gset\n" : ";\n");
    ++r.statements;
  };
  add(bind(receive_sql, {q, "1", "60", "0", "'" + queue + "-dlq'"}), true);
  add(bind(claim_sql, {"ARRAY[:body]::uuid[]", "ARRAY[gen_random_uuid()]", "ARRAY['ingest']",
                       "ARRAY['']", "ARRAY[3]", "ARRAY[true]", "ARRAY['']", "ARRAY['']",
                       "ARRAY[true]", "'pgbench'", "300", "false"}),
      true);
  add(bind(visibility_sql, {q, "ARRAY[:receipt]::uuid[]", "ARRAY[345]"}));
  add(bind(renew_sql, {"ARRAY[:body]::uuid[]", "ARRAY[:token]::uuid[]", "300"}));
  add(bind(load_sql, {"ARRAY[:body]::uuid[]"}));
  add(bind(transcription_sql, {"ARRAY[:body]::uuid[]", "ARRAY[:token]::uuid[]",
                               "ARRAY['transcriptions/x/transcription-output.json']",
                               "ARRAY[NULL]::text[]", "ARRAY[1.0]"}));
  add("BEGIN");
  add(bind(result_sql, {"ARRAY[:body]::uuid[]", "ARRAY[:token]::uuid[]",
                        "ARRAY['{\"invoice_number\":\"INV-1\",\"total\":119.0}']", "ARRAY[true]",
                        "ARRAY[0]", "ARRAY[0]", "ARRAY['instant']"}));
  add(bind(finish_sql, {"ARRAY[:body]::uuid[]",
                        "ARRAY[:token]::uuid[]",
                        "array_fill(:body::uuid, ARRAY[" + n + "])",
                        steps,
                        "array_fill('ok'::text, ARRAY[" + n + "])",
                        "array_fill(NULL::text, ARRAY[" + n + "])",
                        "array_fill(1::bigint, ARRAY[" + n + "])",
                        "array_fill('pgbench'::text, ARRAY[" + n + "])",
                        "array_fill(0::bigint, ARRAY[" + n + "])",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "false",
                        "ARRAY[NULL]::text[]"}));
  add("COMMIT");
  add(bind(delete_sql, {q, "ARRAY[:receipt]::uuid[]"}));
  return r;
}

} // namespace ingestd::bench
