-- Scheduling: priority with ageing, and cancellation.
--
-- Priority: 0..100, lower first, default 50, stored on the ingestion and carried by its queue
-- message. The Postgres queue serves by effective priority = priority - waiting minutes x the
-- queue's ageing rate, so nothing starves. As now() is the same for every row of one receive,
--   priority - rate * (now - sent_at) = (priority + rate * sent_at) - rate * now
-- orders the rows as rank = priority + rate * sent_at does: rank is fixed when the message is
-- sent (a trigger computes it from the queue's rate), and the dequeue walks an index on it.
ALTER TABLE ingestion ADD COLUMN priority smallint NOT NULL DEFAULT 50
  CONSTRAINT ingestion_priority_check CHECK (priority BETWEEN 0 AND 100);

-- Levels gained per minute of waiting (0: strict priority, FIFO within a level). `ingestd queues
-- create` sets it from queue.priority_ageing_per_minute.
ALTER TABLE queue ADD COLUMN ageing_per_minute double precision NOT NULL DEFAULT 1
  CONSTRAINT queue_ageing_check CHECK (ageing_per_minute >= 0);

ALTER TABLE queue_message ADD COLUMN priority smallint NOT NULL DEFAULT 50
  CONSTRAINT queue_message_priority_check CHECK (priority BETWEEN 0 AND 100);
ALTER TABLE queue_message ADD COLUMN rank double precision;

CREATE FUNCTION queue_message_rank() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  NEW.rank := NEW.priority + COALESCE((SELECT q.ageing_per_minute FROM queue AS q
                                        WHERE q.name = NEW.queue_name), 1)
                             / 60.0 * extract(epoch FROM NEW.sent_at);
  RETURN NEW;
END;
$fn$;

CREATE TRIGGER queue_message_rank_insert
  BEFORE INSERT ON queue_message
  FOR EACH ROW EXECUTE FUNCTION queue_message_rank();

-- Rows queued before this migration: their priority is the default.
UPDATE queue_message SET rank = 50 + extract(epoch FROM sent_at) / 60.0;
ALTER TABLE queue_message ALTER COLUMN rank SET NOT NULL;

-- The dequeue: queue_name = $1 AND visible_at <= now() ORDER BY rank, id. Invisible rows (in
-- flight, backing off) are filtered on the way; there are few of them next to a backlog.
CREATE INDEX queue_message_rank_idx ON queue_message (queue_name, rank, id);

-- Cancellation: `ingestd cancel` and DELETE /v1/ingestions/{id}. A queued ingestion becomes
-- `cancelled` at once (its message is deleted when it arrives); a running one gets
-- cancel_requested_at, which the heartbeat reports to its job, and the job stops at its next step
-- boundary, recording `cancelled` with its fenced token.
ALTER TABLE ingestion ADD COLUMN cancel_requested_at timestamptz;
ALTER TABLE ingestion DROP CONSTRAINT ingestion_status_check;
ALTER TABLE ingestion ADD CONSTRAINT ingestion_status_check
  CHECK (status IN ('in-progress', 'completed', 'failed', 'skipped', 'cancelled'));

-- The heartbeat's look-up: running ingestions with a cancel request.
CREATE INDEX ingestion_cancel_requested_idx ON ingestion (id)
  WHERE cancel_requested_at IS NOT NULL AND status = 'in-progress';

-- A cancelled ingestion leaves its document's data and review flag as they were; the document
-- records that something happened to it (updated_at).
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
  ELSIF NEW.status = 'cancelled' THEN
    UPDATE document SET updated_at = now() WHERE id = NEW.document_id;
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
  WHEN (NEW.status IN ('completed', 'failed', 'skipped', 'cancelled')
        AND (OLD.status IS DISTINCT FROM NEW.status
             OR OLD.structured_data IS DISTINCT FROM NEW.structured_data
             OR OLD.valid_structured_data IS DISTINCT FROM NEW.valid_structured_data))
  EXECUTE FUNCTION update_document_from_ingestion();

-- The status event stream (migration 009) learns the new status: INGESTION_CANCELLED.
CREATE OR REPLACE FUNCTION ingestd_ingestion_changed_event() RETURNS trigger
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
  ELSIF NEW.status = 'cancelled' THEN
    PERFORM ingestd_emit_event('INGESTION_CANCELLED', v_tenant, NEW.document_id, NEW.id,
                               jsonb_build_object('attempts', NEW.attempt_count), v_key);
  END IF;
  RETURN NULL;
END;
$fn$;
