-- A work item's changes of state, handled once per statement instead of once per row. The claims
-- and completions come coalesced (hundreds of items in one statement), and a row trigger ran a
-- PL/pgSQL function, an UPDATE of the ingestion and one or two event writes for each item: most of
-- a completion's time in the database. The same changes and the same events, per statement:
--   - the ingestion of an ingest or unpack item takes the item's new status (which moves its
--     document: update_document_from_ingestion);
--   - events, in this order for each document: WARNING (an attempt that failed and will be
--     retried), INGESTION_STARTED (a claim), the final statuses (INGESTION_COMPLETED then
--     DOCUMENT_PROCESSED, INGESTION_FAILED, INGESTION_SKIPPED, INGESTION_CANCELLED), and a
--     matching's end (MATCHING_COMPLETED, MATCHING_FAILED).
DROP TRIGGER work_item_changed ON work_item;
DROP FUNCTION ingestd_work_item_changed();

CREATE FUNCTION ingestd_work_items_changed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE ingestion AS i
     SET status = n.status,
         completed_at = CASE WHEN n.status = 'in-progress' THEN NULL
                             ELSE COALESCE(n.completed_at, now()) END,
         skip_reason = CASE WHEN n.status = 'skipped' THEN 'known_file' END
    FROM changed_items AS n JOIN replaced_items AS o ON o.id = n.id
   WHERE i.id = n.id AND n.stage <> 'match' AND o.status IS DISTINCT FROM n.status;

  PERFORM ingestd_emit_event(e.type, e.tenant_id, e.document_id, e.ingestion_id, e.payload,
                             e.document_id::text)
     FROM (
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
        ORDER BY 2, 4
     ) AS e;
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER work_item_changed AFTER UPDATE ON work_item
  REFERENCING OLD TABLE AS replaced_items NEW TABLE AS changed_items
  FOR EACH STATEMENT EXECUTE FUNCTION ingestd_work_items_changed();
