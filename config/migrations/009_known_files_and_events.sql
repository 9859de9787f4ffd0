-- Known-file filtering (deNIST) and the status event stream.

-- The known-file hash set (NSRL's MD5 and SHA-256), lower-case hex, one row per hash: a line of
-- an NSRL file with both hashes makes two rows. `ingestd known-files import|add` fills it
-- (adapters/db/pg_known_files.cpp); the claim looks a document up in it.
-- The "C" collation: hex digits need no linguistic order, and byte comparison keeps the index
-- build and look-ups of millions of hashes cheap.
CREATE TABLE known_file (
  hash      text COLLATE "C" PRIMARY KEY,
  algorithm text NOT NULL,
  -- Where it came from: the imported file's name, or "add".
  source    text,
  added_at  timestamptz NOT NULL DEFAULT now(),
  -- Lower-case hex of 16 (MD5) or 32 (SHA-256) bytes; decode() refuses anything but hex, and
  -- costs a third of a regular expression on an import of millions of rows.
  CONSTRAINT known_file_hash_check
    CHECK (octet_length(decode(hash, 'hex'))
             = CASE algorithm WHEN 'md5' THEN 16 WHEN 'sha256' THEN 32 END
           AND hash = lower(hash))
);

-- The document's MD5 (hex) beside its SHA-256 content_hash, for the MD5 half of the hash set;
-- NULL for documents taken in before this migration.
ALTER TABLE document ADD COLUMN content_md5 text;

-- A new final status: `skipped`, with its reason (only `known_file` so far). Not an error and
-- not for review.
ALTER TABLE ingestion ADD COLUMN skip_reason text;
ALTER TABLE ingestion DROP CONSTRAINT ingestion_status_check;
ALTER TABLE ingestion ADD CONSTRAINT ingestion_status_check
  CHECK (status IN ('in-progress', 'completed', 'failed', 'skipped'));
ALTER TABLE ingestion ADD CONSTRAINT ingestion_skip_reason_check
  CHECK ((status = 'skipped') = (skip_reason IS NOT NULL)
         AND (skip_reason IS NULL OR skip_reason IN ('known_file')));

-- The outcome's trigger (migration 001) learns the new status: a skipped document needs no human.
CREATE OR REPLACE FUNCTION update_document_from_ingestion() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.status = 'failed' THEN
    UPDATE document
       SET structured_data = COALESCE(NEW.structured_data, structured_data),
           needs_human_review = true,
           updated_at = now()
     WHERE id = NEW.document_id;
  ELSIF NEW.status = 'skipped' THEN
    UPDATE document SET needs_human_review = false, updated_at = now()
     WHERE id = NEW.document_id;
  ELSE
    UPDATE document
       SET structured_data = NEW.structured_data,
           needs_human_review = NOT COALESCE(NEW.valid_structured_data, true),
           updated_at = now()
     WHERE id = NEW.document_id;
  END IF;
  RETURN NEW;
END;
$fn$;

DROP TRIGGER ingestion_update_document ON ingestion;
CREATE TRIGGER ingestion_update_document
  AFTER UPDATE OF structured_data, valid_structured_data, status ON ingestion
  FOR EACH ROW
  WHEN (NEW.status IN ('completed', 'failed', 'skipped')
        AND (OLD.status IS DISTINCT FROM NEW.status
             OR OLD.structured_data IS DISTINCT FROM NEW.structured_data
             OR OLD.valid_structured_data IS DISTINCT FROM NEW.valid_structured_data))
  EXECUTE FUNCTION update_document_from_ingestion();

-- The status event stream, in the outbox (migration 004): each event is one row with destination
-- 'events' (the stream `ingestd events` prints, never relayed: written as sent, pruned after the
-- retention) and one row per registered sink ('events:webhook', 'events:sqs') that the relay
-- delivers, in order per ordering_key (the document, or the worker for worker events).
ALTER TABLE event_outbox ADD COLUMN event_id uuid;
ALTER TABLE event_outbox ADD COLUMN ordering_key text;

-- The relay's order check: an earlier unsent row of the same key and destination.
CREATE INDEX event_outbox_order_idx ON event_outbox (destination, ordering_key, id)
  WHERE sent_at IS NULL AND ordering_key IS NOT NULL;
-- `ingestd events`: the stream in order.
CREATE INDEX event_outbox_stream_idx ON event_outbox (id) WHERE destination = 'events';

-- The sinks some node delivers to; a node that runs with a sink configured registers it at start
-- (pg_outbox_repository::register_sinks), and every event gets a row for each.
CREATE TABLE event_sink (
  name          text PRIMARY KEY CHECK (name IN ('webhook', 'sqs')),
  registered_at timestamptz NOT NULL DEFAULT now()
);

-- Writes one event in the caller's transaction.
CREATE FUNCTION ingestd_emit_event(p_type text, p_tenant uuid, p_document uuid, p_ingestion uuid,
                                   p_payload jsonb, p_key text) RETURNS void
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
  INSERT INTO event_outbox (destination, body, event_id, ordering_key, sent_at)
  VALUES ('events', v_body, v_id, p_key, now());
  INSERT INTO event_outbox (destination, body, event_id, ordering_key)
  SELECT 'events:' || s.name, v_body, v_id, p_key FROM event_sink AS s ORDER BY s.name;
END;
$fn$;

-- DOCUMENT_ADDED.
CREATE FUNCTION ingestd_document_added_event() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM ingestd_emit_event('DOCUMENT_ADDED', NEW.tenant_id, NEW.id, NULL,
                             jsonb_build_object('content_hash', NEW.content_hash,
                                                'mime_type', NEW.mime_type,
                                                'file_path', NEW.file_path),
                             NEW.id::text);
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER document_added_event AFTER INSERT ON document
  FOR EACH ROW EXECUTE FUNCTION ingestd_document_added_event();

-- MATCHING_COMPLETED and MATCHING_FAILED, as the matching status reaches its end.
CREATE FUNCTION ingestd_document_matching_event() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.matching_status = 'succeeded' THEN
    PERFORM ingestd_emit_event('MATCHING_COMPLETED', NEW.tenant_id, NEW.id, NULL,
                               jsonb_build_object('cluster_id', NEW.cluster_id), NEW.id::text);
  ELSE
    PERFORM ingestd_emit_event('MATCHING_FAILED', NEW.tenant_id, NEW.id, NULL,
                               jsonb_build_object('error', left(NEW.matching_error, 500),
                                                  'attempts', NEW.matching_attempts),
                               NEW.id::text);
  END IF;
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER document_matching_event AFTER UPDATE OF matching_status ON document
  FOR EACH ROW
  WHEN (NEW.matching_status IN ('succeeded', 'failed')
        AND OLD.matching_status IS DISTINCT FROM NEW.matching_status)
  EXECUTE FUNCTION ingestd_document_matching_event();

-- INGESTION_QUEUED.
CREATE FUNCTION ingestd_ingestion_queued_event() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM ingestd_emit_event('INGESTION_QUEUED', d.tenant_id, NEW.document_id, NEW.id,
                             jsonb_build_object('file_name', NEW.source_metadata->>'file_name'),
                             NEW.document_id::text)
     FROM document AS d WHERE d.id = NEW.document_id;
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER ingestion_queued_event AFTER INSERT ON ingestion
  FOR EACH ROW EXECUTE FUNCTION ingestd_ingestion_queued_event();

-- The ingestion's changes of state: a claim (INGESTION_STARTED), an attempt that failed and will
-- be retried (WARNING), and the final statuses (INGESTION_COMPLETED with DOCUMENT_PROCESSED,
-- INGESTION_FAILED, INGESTION_SKIPPED).
CREATE FUNCTION ingestd_ingestion_changed_event() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  v_tenant uuid;
  v_key    text := NEW.document_id::text;
BEGIN
  SELECT tenant_id INTO v_tenant FROM document WHERE id = NEW.document_id;
  IF NEW.status = 'in-progress' THEN
    IF NEW.attempt_count > OLD.attempt_count THEN
      PERFORM ingestd_emit_event('WARNING', v_tenant, NEW.document_id, NEW.id,
                                 jsonb_build_object('kind', 'retry', 'attempt', NEW.attempt_count,
                                                    'error_class', NEW.error_class,
                                                    'error', left(NEW.last_error, 500)),
                                 v_key);
    END IF;
    IF NEW.claim_token IS NOT NULL AND NEW.claim_token IS DISTINCT FROM OLD.claim_token THEN
      PERFORM ingestd_emit_event('INGESTION_STARTED', v_tenant, NEW.document_id, NEW.id,
                                 jsonb_build_object('worker_id', NEW.claimed_by,
                                                    'attempt', NEW.attempt_count + 1),
                                 v_key);
    END IF;
  ELSIF NEW.status = 'completed' THEN
    PERFORM ingestd_emit_event('INGESTION_COMPLETED', v_tenant, NEW.document_id, NEW.id,
                               jsonb_build_object('valid_structured_data', NEW.valid_structured_data,
                                                  'model', NEW.extraction_model),
                               v_key);
    PERFORM ingestd_emit_event('DOCUMENT_PROCESSED', v_tenant, NEW.document_id, NEW.id,
                               jsonb_build_object('needs_human_review',
                                                  NOT COALESCE(NEW.valid_structured_data, true)),
                               v_key);
  ELSIF NEW.status = 'failed' THEN
    PERFORM ingestd_emit_event('INGESTION_FAILED', v_tenant, NEW.document_id, NEW.id,
                               jsonb_build_object('error_class', NEW.error_class,
                                                  'error', left(NEW.last_error, 500),
                                                  'attempts', NEW.attempt_count),
                               v_key);
  ELSIF NEW.status = 'skipped' THEN
    PERFORM ingestd_emit_event('INGESTION_SKIPPED', v_tenant, NEW.document_id, NEW.id,
                               jsonb_build_object('reason', NEW.skip_reason), v_key);
  END IF;
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER ingestion_changed_event AFTER UPDATE ON ingestion
  FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status
        OR (NEW.status = 'in-progress'
            AND (NEW.attempt_count > OLD.attempt_count
                 OR (NEW.claim_token IS NOT NULL
                     AND NEW.claim_token IS DISTINCT FROM OLD.claim_token))))
  EXECUTE FUNCTION ingestd_ingestion_changed_event();
