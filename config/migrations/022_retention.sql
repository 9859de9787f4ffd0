-- Retention (retention.*): the node prunes documents' objects, audit rows and status events past
-- their age, in batches, oldest first. A pruned original or derived object leaves storage; its row keeps its
-- key and says when it went, so that a reader finds "pruned" rather than a missing file. The
-- partial indexes hold only what has not been pruned yet, oldest first.
ALTER TABLE document ADD COLUMN original_pruned_at timestamptz;
ALTER TABLE ingestion
  ADD COLUMN derived_pruned_at timestamptz,
  ADD COLUMN audit_pruned_at timestamptz;

CREATE INDEX document_original_retention_idx ON document (created_at)
  WHERE original_pruned_at IS NULL;
CREATE INDEX ingestion_derived_retention_idx ON ingestion (created_at)
  WHERE derived_pruned_at IS NULL;
CREATE INDEX ingestion_audit_retention_idx ON ingestion (created_at)
  WHERE audit_pruned_at IS NULL;

-- The status events carry their tenant in a column too, so that retention finds a tenant's events
-- without reading their bodies (rows written before read it from the body).
CREATE OR REPLACE FUNCTION ingestd_emit_event(p_type text, p_tenant uuid, p_document uuid,
                                              p_ingestion uuid, p_payload jsonb, p_key text)
RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  v_id   uuid := gen_random_uuid();
  v_body text;
BEGIN
  v_body := jsonb_build_object(
    'id', v_id, 'type', p_type,
    'time', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'tenant_id', p_tenant, 'document_id', p_document, 'ingestion_id', p_ingestion,
    'payload', COALESCE(p_payload, '{}'::jsonb))::text;
  INSERT INTO event_outbox (destination, body, event_id, ordering_key, sent_at, tenant_id)
  VALUES ('events', v_body, v_id, p_key, now(), p_tenant);
  INSERT INTO event_outbox (destination, body, event_id, ordering_key, tenant_id)
  SELECT 'events:' || s.name, v_body, v_id, p_key, p_tenant FROM event_sink AS s
   WHERE s.types IS NULL OR p_type = ANY (s.types)
   ORDER BY s.name;
END;
$fn$;
