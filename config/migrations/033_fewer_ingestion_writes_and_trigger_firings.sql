-- Fewer writes of an ingestion and fewer firings of its statement triggers per document.
-- - An ingestion is completed by its results statement (pg_ingest_repository's), which runs in
--   the completion's transaction before the work items are finished and now sets the status with
--   the data: the row is updated once per completion instead of twice (its results, then its
--   status from the work item's trigger). The work item's trigger leaves an ingestion that already
--   has the status alone.
-- - A statement trigger fires for every statement, whatever rows it changed, and each firing of
--   these ran its statements (0.3-0.9 ms, and an UPDATE of no rows fires the ingestion's own
--   statement triggers in turn). The work item's trigger now updates ingestions only when a status
--   changed (one side of the change is not in progress), which a claim never does; the
--   ingestion's trigger moves documents only when an ingestion has a final status, which a
--   transcription never has.
-- - The status events look a completed item's ingestion up by its key; the plan read the whole
--   ingestion table into a hash at a firing of a few hundred rows (5 of 9 ms).
-- The statements and what they write are migration 030's otherwise.
DO $migration$
DECLARE
  -- ingestd_ingestions_changed(): the document takes its ingestion's outcome.
  document_outcomes constant text := $q$
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
   WHERE d.id = n.document_id
  $q$;
  -- ingestd_work_items_changed(): the ingestion takes its work item's status ...
  ingestion_statuses constant text := $q$
  UPDATE ingestion AS i
     SET status = n.status,
         completed_at = CASE WHEN n.status = 'in-progress' THEN NULL
                             ELSE COALESCE(n.completed_at, now()) END,
         skip_reason = CASE WHEN n.status = 'skipped' THEN 'known_file' END
    FROM changed_items AS n JOIN replaced_items AS o ON o.id = n.id
   WHERE i.id = n.id AND n.stage <> 'match' AND o.status IS DISTINCT FROM n.status
     AND i.status IS DISTINCT FROM n.status
  $q$;
  -- ... and the status events of the statement, in order (by document, then WARNING,
  -- INGESTION_STARTED, the final statuses, a matching's end), each with its id and body once.
  status_events constant text := $q$
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
      -- Looked up by key for a completed item only (OFFSET 0 keeps the planner from joining
      -- the whole table instead, as it did for a few hundred rows).
      LEFT JOIN LATERAL (SELECT i.valid_structured_data, i.extraction_model FROM ingestion AS i
                          WHERE i.id = n.id AND n.status = 'completed' OFFSET 0) AS i ON true
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
   ORDER BY w.seq, s.name
  $q$;
BEGIN
  EXECUTE format($f$
CREATE OR REPLACE FUNCTION ingestd_ingestions_changed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM changed_ingestions
                  WHERE status IN ('completed', 'failed', 'skipped', 'cancelled')) THEN
    RETURN NULL;
  END IF;
  IF (SELECT count(*) FROM changed_ingestions) <= 100 THEN
    %s;
  ELSE
    EXECUTE %L;
  END IF;
  RETURN NULL;
END;
$fn$
$f$, document_outcomes, document_outcomes);

  EXECUTE format($f$
CREATE OR REPLACE FUNCTION ingestd_work_items_changed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  status_changed constant boolean :=
    EXISTS (SELECT 1 FROM changed_items WHERE stage <> 'match' AND status <> 'in-progress')
    OR EXISTS (SELECT 1 FROM replaced_items WHERE stage <> 'match' AND status <> 'in-progress');
BEGIN
  IF (SELECT count(*) FROM changed_items) <= 100 THEN
    IF status_changed THEN
      %s;
    END IF;
    %s;
  ELSE
    IF status_changed THEN
      EXECUTE %L;
    END IF;
    EXECUTE %L;
  END IF;
  RETURN NULL;
END;
$fn$
$f$, ingestion_statuses, status_events, ingestion_statuses, status_events);
END;
$migration$;
