-- An ingestion's outcome moved to its document, and the status events of a work item's changes,
-- written once per statement instead of once per row. Claims and completions come coalesced
-- (hundreds of items in one statement); a row trigger ran a PL/pgSQL function and an UPDATE of
-- the document for each ingestion, and each event was a function call of its own with two
-- INSERTs. The same changes and the same events (in the same order per destination), now one
-- UPDATE and two INSERTs for the whole statement.

-- One event's body, as `ingestd events` and every sink read it.
CREATE FUNCTION ingestd_event_body(p_id uuid, p_type text, p_tenant uuid, p_document uuid,
                                   p_ingestion uuid, p_payload jsonb)
RETURNS text
LANGUAGE sql VOLATILE AS $fn$
  SELECT jsonb_build_object(
    'id', p_id, 'type', p_type,
    'time', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'tenant_id', p_tenant, 'document_id', p_document, 'ingestion_id', p_ingestion,
    'payload', COALESCE(p_payload, '{}'::jsonb))::text
$fn$;

-- One event (the review desk's, the batches', the budgets'): a row of the stream and a row for
-- each registered sink that takes its type.
CREATE OR REPLACE FUNCTION ingestd_emit_event(p_type text, p_tenant uuid, p_document uuid,
                                              p_ingestion uuid, p_payload jsonb, p_key text)
RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  v_id   uuid := gen_random_uuid();
  v_body text := ingestd_event_body(v_id, p_type, p_tenant, p_document, p_ingestion, p_payload);
BEGIN
  INSERT INTO event_outbox (destination, body, event_id, ordering_key, sent_at, tenant_id)
  VALUES ('events', v_body, v_id, p_key, now(), p_tenant);
  INSERT INTO event_outbox (destination, body, event_id, ordering_key, tenant_id)
  SELECT 'events:' || s.name, v_body, v_id, p_key, p_tenant FROM event_sink AS s
   WHERE s.types IS NULL OR p_type = ANY (s.types)
   ORDER BY s.name;
END;
$fn$;

-- -- The document's outcome ---------------------------------------------------------------------

-- As update_document_from_ingestion did, for every ingestion of the statement that reached (or
-- changed its data in) a final status: on completion the document takes the structured data and
-- a person reviews it unless it is valid; on failure a person always reviews it, and it keeps its
-- earlier data unless the failed attempt left output for the reviewer; a skipped document (a
-- known file) needs no person; a cancelled one keeps its data and flag. Two ingestions of one
-- document in one statement: the one completed last counts.
DROP TRIGGER ingestion_update_document ON ingestion;
DROP FUNCTION update_document_from_ingestion();

CREATE FUNCTION ingestd_ingestions_changed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE document AS d
     SET structured_data = CASE n.status
                             WHEN 'completed' THEN n.structured_data
                             WHEN 'failed' THEN COALESCE(n.structured_data, d.structured_data)
                             ELSE d.structured_data END,
         needs_human_review = CASE n.status
                                WHEN 'completed' THEN NOT COALESCE(n.valid_structured_data, true)
                                WHEN 'failed' THEN true
                                WHEN 'skipped' THEN false
                                ELSE d.needs_human_review END,
         updated_at = now()
    FROM (SELECT DISTINCT ON (n.document_id) n.*
            FROM changed_ingestions AS n JOIN replaced_ingestions AS o ON o.id = n.id
           WHERE n.status IN ('completed', 'failed', 'skipped', 'cancelled')
             AND (o.status IS DISTINCT FROM n.status
                  OR o.structured_data IS DISTINCT FROM n.structured_data
                  OR o.valid_structured_data IS DISTINCT FROM n.valid_structured_data)
           ORDER BY n.document_id, n.completed_at DESC NULLS LAST, n.id) AS n
   WHERE d.id = n.document_id;
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER ingestion_update_document AFTER UPDATE ON ingestion
  REFERENCING OLD TABLE AS replaced_ingestions NEW TABLE AS changed_ingestions
  FOR EACH STATEMENT EXECUTE FUNCTION ingestd_ingestions_changed();

-- -- A work item's changes (migration 027), its events written as a set --------------------------

CREATE OR REPLACE FUNCTION ingestd_work_items_changed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE ingestion AS i
     SET status = n.status,
         completed_at = CASE WHEN n.status = 'in-progress' THEN NULL
                             ELSE COALESCE(n.completed_at, now()) END,
         skip_reason = CASE WHEN n.status = 'skipped' THEN 'known_file' END
    FROM changed_items AS n JOIN replaced_items AS o ON o.id = n.id
   WHERE i.id = n.id AND n.stage <> 'match' AND o.status IS DISTINCT FROM n.status;

  -- The events of the statement, in order (by document, then WARNING, INGESTION_STARTED, the
  -- final statuses, a matching's end), each with its id and body once.
  WITH raised AS (
    SELECT n.tenant_id, n.document_id, n.id AS ingestion_id, v.ord, v.type,
           CASE v.type
             WHEN 'WARNING' THEN
               jsonb_build_object('kind', 'retry', 'attempt', n.attempt_count,
                                  'error_class', n.error_class,
                                  'error', left(n.last_error, 500))
             WHEN 'INGESTION_STARTED' THEN
               jsonb_build_object('worker_id', n.claimed_by, 'attempt', n.attempt_count + 1)
             WHEN 'INGESTION_COMPLETED' THEN
               jsonb_build_object('valid_structured_data', i.valid_structured_data,
                                  'model', i.extraction_model)
             WHEN 'DOCUMENT_PROCESSED' THEN
               jsonb_build_object('needs_human_review',
                                  NOT COALESCE(i.valid_structured_data, true))
             WHEN 'INGESTION_FAILED' THEN
               jsonb_build_object('error_class', n.error_class,
                                  'error', left(n.last_error, 500),
                                  'attempts', n.attempt_count)
             WHEN 'INGESTION_SKIPPED' THEN jsonb_build_object('reason', 'known_file')
             ELSE jsonb_build_object('attempts', n.attempt_count)
           END AS payload
      FROM changed_items AS n
      JOIN replaced_items AS o ON o.id = n.id
      LEFT JOIN ingestion AS i ON i.id = n.id AND n.status = 'completed'
     CROSS JOIN LATERAL (VALUES
       (1, 'WARNING', n.status = 'in-progress' AND n.attempt_count > o.attempt_count),
       (2, 'INGESTION_STARTED', n.status = 'in-progress' AND n.claim_token IS NOT NULL
                                AND n.claim_token IS DISTINCT FROM o.claim_token),
       (3, 'INGESTION_COMPLETED', n.status = 'completed'),
       (4, 'DOCUMENT_PROCESSED', n.status = 'completed'),
       (3, 'INGESTION_FAILED', n.status = 'failed'),
       (3, 'INGESTION_SKIPPED', n.status = 'skipped'),
       (3, 'INGESTION_CANCELLED', n.status = 'cancelled')
     ) AS v(ord, type, applies)
     WHERE n.stage <> 'match' AND v.applies
       AND (v.ord <= 2 OR o.status IS DISTINCT FROM n.status)
    UNION ALL
    SELECT n.tenant_id, n.document_id, NULL, 5,
           CASE n.status WHEN 'completed' THEN 'MATCHING_COMPLETED' ELSE 'MATCHING_FAILED' END,
           CASE n.status
             WHEN 'completed' THEN jsonb_build_object('cluster_id', d.cluster_id)
             ELSE jsonb_build_object('error', left(n.last_error, 500),
                                     'attempts', n.attempt_count) END
      FROM changed_items AS n
      JOIN replaced_items AS o ON o.id = n.id
      LEFT JOIN document AS d ON d.id = n.document_id
     WHERE n.stage = 'match' AND n.status IN ('completed', 'failed')
       AND o.status IS DISTINCT FROM n.status
       -- As before: a completed matching's event only for a document that exists.
       AND (n.status = 'failed' OR d.id IS NOT NULL)
  ), event AS (
    SELECT r.*, gen_random_uuid() AS event_id,
           row_number() OVER (ORDER BY r.document_id, r.ord) AS seq
      FROM raised AS r
  ), written AS (
    SELECT e.*, e.document_id::text AS ordering_key,
           ingestd_event_body(e.event_id, e.type, e.tenant_id, e.document_id, e.ingestion_id,
                              e.payload) AS body
      FROM event AS e
  ), stream AS (
    INSERT INTO event_outbox (destination, body, event_id, ordering_key, sent_at, tenant_id)
    SELECT 'events', w.body, w.event_id, w.ordering_key, now(), w.tenant_id
      FROM written AS w ORDER BY w.seq
  )
  INSERT INTO event_outbox (destination, body, event_id, ordering_key, tenant_id)
  SELECT 'events:' || s.name, w.body, w.event_id, w.ordering_key, w.tenant_id
    FROM written AS w JOIN event_sink AS s ON s.types IS NULL OR w.type = ANY (s.types)
   ORDER BY w.seq, s.name;
  RETURN NULL;
END;
$fn$;

-- -- Room for the lifecycle's updates on their own pages -----------------------------------------

-- A work item and its ingestion are updated several times in their life (the claim, the lease's
-- renewals, the transcription, the results), mostly in columns no index holds. With room left on
-- the row's page such an update is a heap-only tuple: no index is touched. New pages keep a
-- quarter free.
ALTER TABLE ingestion SET (fillfactor = 75);
ALTER TABLE work_item SET (fillfactor = 75);
