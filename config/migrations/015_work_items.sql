-- ingestd-min-node-version: 0.2.0
-- One claimed-work table for every stage. A work item is one stage's job on one subject: an
-- ingestion (stages ingest and unpack: the item's id is the ingestion's) or a document (stage
-- match: the item's id is the document's). The claim, its lease, the attempts and crashes, the
-- priority and size class, the last error and the timestamps are the item's; the ingestion and
-- the document keep what their stage produced. The queue message of a work item carries its id.
--
-- Every hand-off writes its work item and its queue message in the transaction that makes it
-- true (ingestd_add_work below): intake, a completion that starts the next stage, a container's
-- children, a reviewer's reprocess, a move to another size class, the sweeper's revival.
--
-- The ingestion's and the document's claim columns move here, rows carried over. Older nodes
-- read those columns, hence the minimum node version above.
--
-- This file also holds the current body of every trigger function of the schema (the document's
-- outcome, the status event stream, the review version stays in migration 007): a later
-- migration that changes one replaces it here in full.

CREATE TABLE work_item (
  -- The subject: the ingestion's id (ingest, unpack) or the document's (match).
  id                  uuid PRIMARY KEY,
  stage               text NOT NULL CHECK (stage IN ('ingest', 'unpack', 'match')),
  document_id         uuid NOT NULL REFERENCES document (id),
  tenant_id           uuid NOT NULL,
  -- in-progress until the stage's outcome: completed, failed, skipped (a known file) or
  -- cancelled. Claimed while claim_token is set and the lease has not run out.
  status              text NOT NULL DEFAULT 'in-progress'
    CHECK (status IN ('in-progress', 'completed', 'failed', 'skipped', 'cancelled')),
  -- Fencing: every write after the claim carries the token; every deliberate end of a claim
  -- clears it, so a token left on an expired lease is a crash.
  claim_token         uuid,
  claimed_by          text,
  lease_expires_at    timestamptz,
  started_at          timestamptz,
  -- Failed attempts and crashes; crash_count counts the crashes among them.
  attempt_count       integer NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  crash_count         integer NOT NULL DEFAULT 0 CHECK (crash_count >= 0),
  -- 0..100, lower first.
  priority            smallint NOT NULL DEFAULT 50 CHECK (priority BETWEEN 0 AND 100),
  -- The size class it runs in, and attempt_count when it entered that class.
  size_class          text NOT NULL DEFAULT 'small' CHECK (size_class IN ('small', 'large')),
  class_attempts_base integer NOT NULL DEFAULT 0 CHECK (class_attempts_base >= 0),
  last_error          text,
  error_class         text
    CHECK (error_class IS NULL OR error_class IN ('transient', 'permanent', 'claim_lost', 'poison')),
  -- Set by `ingestd cancel` while a worker holds it: the heartbeat tells the job.
  cancel_requested_at timestamptz,
  -- When a worker should next take it (a back-off pushes it), and the last time its queue
  -- message was known to exist (sent, received, kept invisible, given back): the sweeper's net.
  due_at              timestamptz NOT NULL DEFAULT now(),
  message_seen_at     timestamptz NOT NULL DEFAULT now(),
  created_at          timestamptz NOT NULL DEFAULT now(),
  completed_at        timestamptz
);

-- The sweeper: open items by stage, class and due time.
CREATE INDEX work_item_open_idx ON work_item (stage, size_class, due_at) WHERE status = 'in-progress';
-- A document's items (its matching, the status pages).
CREATE INDEX work_item_document_idx ON work_item (document_id);
-- Status: open and failed items by stage.
CREATE INDEX work_item_stage_status_idx ON work_item (stage, status, error_class);
-- The heartbeat's look-up of cancel requests.
CREATE INDEX work_item_cancel_requested_idx ON work_item (id)
  WHERE cancel_requested_at IS NOT NULL AND status = 'in-progress';

-- The rows of today carried over: an ingestion's item, and a document's matching.
INSERT INTO work_item (id, stage, document_id, tenant_id, status, claim_token, claimed_by,
                       lease_expires_at, started_at, attempt_count, priority, size_class,
                       class_attempts_base, last_error, error_class, cancel_requested_at, due_at,
                       message_seen_at, created_at, completed_at)
SELECT i.id, i.stage, i.document_id, d.tenant_id, i.status, i.claim_token, i.claimed_by,
       i.lease_expires_at, i.started_at, i.attempt_count, i.priority, i.size_class,
       i.class_attempts_base, i.last_error, i.error_class, i.cancel_requested_at, i.due_at,
       i.message_seen_at, i.created_at, i.completed_at
  FROM ingestion AS i JOIN document AS d ON d.id = i.document_id;

-- matching_attempts counted deliveries, the current one included; attempt_count counts the
-- attempts that ended without an outcome (failures and crashes), as for ingestions.
INSERT INTO work_item (id, stage, document_id, tenant_id, status, claim_token, claimed_by,
                       lease_expires_at, started_at, attempt_count, last_error, due_at,
                       message_seen_at, created_at, completed_at)
SELECT d.id, 'match', d.id, d.tenant_id,
       CASE d.matching_status WHEN 'succeeded' THEN 'completed' WHEN 'failed' THEN 'failed'
                              ELSE 'in-progress' END,
       CASE WHEN d.matching_status = 'in-progress' THEN d.matching_claim_token END,
       d.matching_claimed_by, d.matching_lease_expires_at, d.matching_started_at,
       greatest(d.matching_attempts
                - CASE WHEN d.matching_status IN ('in-progress', 'succeeded') THEN 1 ELSE 0 END, 0),
       d.matching_error, now(), d.matching_message_seen_at, d.created_at, d.matching_failed_at
  FROM document AS d WHERE d.matching_status IS NOT NULL;

-- The triggers that read the moved columns go first, then the columns.
DROP TRIGGER ingestion_changed_event ON ingestion;
DROP TRIGGER document_matching_event ON document;
DROP FUNCTION ingestd_ingestion_changed_event();
DROP FUNCTION ingestd_document_matching_event();

ALTER TABLE ingestion
  DROP COLUMN claim_token, DROP COLUMN lease_expires_at, DROP COLUMN claimed_by,
  DROP COLUMN started_at, DROP COLUMN attempt_count, DROP COLUMN last_error,
  DROP COLUMN error_class, DROP COLUMN due_at, DROP COLUMN message_seen_at,
  DROP COLUMN priority, DROP COLUMN size_class, DROP COLUMN class_attempts_base,
  DROP COLUMN cancel_requested_at, DROP COLUMN stage;

ALTER TABLE document
  DROP COLUMN matching_status, DROP COLUMN matching_error, DROP COLUMN matching_attempts,
  DROP COLUMN matching_failed_at, DROP COLUMN matching_claim_token,
  DROP COLUMN matching_claimed_by, DROP COLUMN matching_lease_expires_at,
  DROP COLUMN matching_started_at, DROP COLUMN matching_message_seen_at;

-- A document's matching as the API, `ingestd matches` and `ingestd status` show it: pending
-- (queued), in-progress (claimed), succeeded or failed.
CREATE VIEW document_matching AS
SELECT w.document_id,
       CASE w.status WHEN 'completed' THEN 'succeeded'
                     WHEN 'in-progress' THEN CASE WHEN w.claim_token IS NULL THEN 'pending'
                                                  ELSE 'in-progress' END
                     ELSE w.status END AS matching_status,
       w.last_error AS matching_error,
       -- Deliveries, the one running or the one that succeeded included.
       w.attempt_count + CASE WHEN w.status = 'completed' OR w.claim_token IS NOT NULL
                              THEN 1 ELSE 0 END AS matching_attempts,
       CASE WHEN w.status = 'failed' THEN w.completed_at END AS matching_failed_at,
       CASE WHEN w.claim_token IS NOT NULL THEN w.started_at END AS matching_started_at
  FROM work_item AS w WHERE w.stage = 'match';

-- Queue messages of the next jobs may carry a priority, for a queue that serves by it (SQS
-- priority classes) when the relay sends them.
ALTER TABLE event_outbox ADD COLUMN priority smallint;

-- Event sinks may take a subset of the event types (NULL: all); the failure notifier is one.
ALTER TABLE event_sink ADD COLUMN types text[];
ALTER TABLE event_sink DROP CONSTRAINT event_sink_name_check;
ALTER TABLE event_sink ADD CONSTRAINT event_sink_name_check CHECK (name IN ('webhook', 'sqs', 'notify'));

-- -- Hand-offs ------------------------------------------------------------------------------

-- Sends one queue message in the caller's transaction: a row of the Postgres queue, or an
-- outbox row that the relay sends (SQS). Answers 1.
CREATE FUNCTION ingestd_send(p_queue text, p_body text, p_priority integer, p_via_outbox boolean)
RETURNS integer
LANGUAGE plpgsql AS $fn$
BEGIN
  IF p_via_outbox THEN
    INSERT INTO event_outbox (destination, body, priority) VALUES (p_queue, p_body, p_priority);
  ELSE
    INSERT INTO queue_message (id, queue_name, body, priority)
    VALUES (gen_random_uuid(), p_queue, p_body, COALESCE(p_priority, 50));
  END IF;
  RETURN 1;
END;
$fn$;

-- Adds a work item and sends its message to p_queue. An item that exists already is left as it
-- is and nothing is sent (a retried intake), unless p_reopen: then it starts over (in progress,
-- no attempts, no claim: a document matched again after a new ingestion) and its message is
-- sent. Answers whether a message was sent.
CREATE FUNCTION ingestd_add_work(p_id uuid, p_stage text, p_document uuid, p_tenant uuid,
                                 p_priority integer, p_size_class text, p_queue text,
                                 p_via_outbox boolean, p_reopen boolean)
RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
  v_added boolean;
BEGIN
  INSERT INTO work_item (id, stage, document_id, tenant_id, priority, size_class)
  VALUES (p_id, p_stage, p_document, p_tenant, COALESCE(p_priority, 50), COALESCE(p_size_class, 'small'))
  ON CONFLICT (id) DO NOTHING;
  v_added := FOUND;
  IF NOT v_added THEN
    IF NOT p_reopen THEN
      RETURN false;
    END IF;
    UPDATE work_item
       SET status = 'in-progress', attempt_count = 0, crash_count = 0, claim_token = NULL,
           claimed_by = NULL, lease_expires_at = NULL, started_at = NULL, last_error = NULL,
           error_class = NULL, cancel_requested_at = NULL, completed_at = NULL,
           priority = COALESCE(p_priority, priority), due_at = now(), message_seen_at = now()
     WHERE id = p_id;
  END IF;
  PERFORM ingestd_send(p_queue, p_id::text, p_priority, p_via_outbox);
  RETURN true;
END;
$fn$;

-- Appends audit rows (table ingestion_event) in the caller's transaction; answers how many.
CREATE FUNCTION ingestd_append_audit(p_items uuid[], p_steps text[], p_outcomes text[],
                                     p_details text[], p_durations bigint[], p_workers text[],
                                     p_ats bigint[])
RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  v_count integer;
BEGIN
  INSERT INTO ingestion_event (ingestion_id, step, outcome, detail, duration_ms, worker_id, at)
  SELECT e.item, e.step, e.outcome, e.detail, e.duration_ms, e.worker_id,
         CASE WHEN e.at_ms > 0 THEN to_timestamp(e.at_ms / 1000.0) ELSE now() END
    FROM unnest(p_items, p_steps, p_outcomes, p_details, p_durations, p_workers, p_ats)
         AS e(item, step, outcome, detail, duration_ms, worker_id, at_ms);
  GET DIAGNOSTICS v_count = ROW_COUNT;
  RETURN v_count;
END;
$fn$;

-- -- The document's outcome -------------------------------------------------------------------

-- An ingestion's outcome propagates to its document. On completion the document takes the
-- structured data, and a person reviews it unless it is valid. On failure a person always
-- reviews it, and it keeps its earlier data unless the failed attempt left output for the
-- reviewer. A skipped document (a known file) needs no person; a cancelled one keeps its data
-- and flag.
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

-- -- The status event stream --------------------------------------------------------------------

-- Writes one event in the caller's transaction: a row of the stream ('events', written as sent:
-- `ingestd events` reads it) and a row for each registered sink that takes its type, which the
-- relay delivers in order per ordering key (the document, or the worker for worker events).
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
  INSERT INTO event_outbox (destination, body, event_id, ordering_key, sent_at)
  VALUES ('events', v_body, v_id, p_key, now());
  INSERT INTO event_outbox (destination, body, event_id, ordering_key)
  SELECT 'events:' || s.name, v_body, v_id, p_key FROM event_sink AS s
   WHERE s.types IS NULL OR p_type = ANY (s.types)
   ORDER BY s.name;
END;
$fn$;

-- DOCUMENT_ADDED.
CREATE OR REPLACE FUNCTION ingestd_document_added_event() RETURNS trigger
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

-- INGESTION_QUEUED.
CREATE OR REPLACE FUNCTION ingestd_ingestion_queued_event() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM ingestd_emit_event('INGESTION_QUEUED', d.tenant_id, NEW.document_id, NEW.id,
                             jsonb_build_object('file_name', NEW.source_metadata->>'file_name'),
                             NEW.document_id::text)
     FROM document AS d WHERE d.id = NEW.document_id;
  RETURN NULL;
END;
$fn$;

-- A work item's changes of state. The ingestion of an ingest or unpack item takes the item's
-- final status (which moves its document: update_document_from_ingestion). Events: a claim
-- (INGESTION_STARTED), an attempt that failed and will be retried (WARNING), the final statuses
-- (INGESTION_COMPLETED with DOCUMENT_PROCESSED, INGESTION_FAILED, INGESTION_SKIPPED,
-- INGESTION_CANCELLED), and a matching's end (MATCHING_COMPLETED, MATCHING_FAILED).
CREATE FUNCTION ingestd_work_item_changed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  v_key   text := NEW.document_id::text;
  v_valid boolean;
  v_model text;
BEGIN
  IF NEW.stage = 'match' THEN
    IF NEW.status = 'completed' AND OLD.status IS DISTINCT FROM NEW.status THEN
      PERFORM ingestd_emit_event('MATCHING_COMPLETED', NEW.tenant_id, NEW.document_id, NULL,
                                 jsonb_build_object('cluster_id', d.cluster_id), v_key)
         FROM document AS d WHERE d.id = NEW.document_id;
    ELSIF NEW.status = 'failed' AND OLD.status IS DISTINCT FROM NEW.status THEN
      PERFORM ingestd_emit_event('MATCHING_FAILED', NEW.tenant_id, NEW.document_id, NULL,
                                 jsonb_build_object('error', left(NEW.last_error, 500),
                                                    'attempts', NEW.attempt_count),
                                 v_key);
    END IF;
    RETURN NULL;
  END IF;

  IF OLD.status IS DISTINCT FROM NEW.status THEN
    UPDATE ingestion
       SET status = NEW.status,
           completed_at = CASE WHEN NEW.status = 'in-progress' THEN NULL
                               ELSE COALESCE(NEW.completed_at, now()) END,
           skip_reason = CASE WHEN NEW.status = 'skipped' THEN 'known_file' END
     WHERE id = NEW.id
    RETURNING valid_structured_data, extraction_model INTO v_valid, v_model;
  END IF;

  IF NEW.status = 'in-progress' THEN
    IF NEW.attempt_count > OLD.attempt_count THEN
      PERFORM ingestd_emit_event('WARNING', NEW.tenant_id, NEW.document_id, NEW.id,
                                 jsonb_build_object('kind', 'retry', 'attempt', NEW.attempt_count,
                                                    'error_class', NEW.error_class,
                                                    'error', left(NEW.last_error, 500)),
                                 v_key);
    END IF;
    IF NEW.claim_token IS NOT NULL AND NEW.claim_token IS DISTINCT FROM OLD.claim_token THEN
      PERFORM ingestd_emit_event('INGESTION_STARTED', NEW.tenant_id, NEW.document_id, NEW.id,
                                 jsonb_build_object('worker_id', NEW.claimed_by,
                                                    'attempt', NEW.attempt_count + 1),
                                 v_key);
    END IF;
  ELSIF OLD.status IS NOT DISTINCT FROM NEW.status THEN
    NULL;
  ELSIF NEW.status = 'completed' THEN
    PERFORM ingestd_emit_event('INGESTION_COMPLETED', NEW.tenant_id, NEW.document_id, NEW.id,
                               jsonb_build_object('valid_structured_data', v_valid,
                                                  'model', v_model),
                               v_key);
    PERFORM ingestd_emit_event('DOCUMENT_PROCESSED', NEW.tenant_id, NEW.document_id, NEW.id,
                               jsonb_build_object('needs_human_review',
                                                  NOT COALESCE(v_valid, true)),
                               v_key);
  ELSIF NEW.status = 'failed' THEN
    PERFORM ingestd_emit_event('INGESTION_FAILED', NEW.tenant_id, NEW.document_id, NEW.id,
                               jsonb_build_object('error_class', NEW.error_class,
                                                  'error', left(NEW.last_error, 500),
                                                  'attempts', NEW.attempt_count),
                               v_key);
  ELSIF NEW.status = 'skipped' THEN
    PERFORM ingestd_emit_event('INGESTION_SKIPPED', NEW.tenant_id, NEW.document_id, NEW.id,
                               jsonb_build_object('reason', 'known_file'), v_key);
  ELSIF NEW.status = 'cancelled' THEN
    PERFORM ingestd_emit_event('INGESTION_CANCELLED', NEW.tenant_id, NEW.document_id, NEW.id,
                               jsonb_build_object('attempts', NEW.attempt_count), v_key);
  END IF;
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER work_item_changed AFTER UPDATE ON work_item
  FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status
        OR (NEW.status = 'in-progress'
            AND (NEW.attempt_count > OLD.attempt_count
                 OR (NEW.claim_token IS NOT NULL
                     AND NEW.claim_token IS DISTINCT FROM OLD.claim_token))))
  EXECUTE FUNCTION ingestd_work_item_changed();

-- REVIEW_COMPLETED: every decision a reviewer saves, with the providers a reprocess chose.
CREATE OR REPLACE FUNCTION ingestd_review_completed_event() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM ingestd_emit_event('REVIEW_COMPLETED', NEW.tenant_id, NEW.document_id, NEW.ingestion_id,
                             jsonb_build_object('action', NEW.action, 'reviewer', NEW.reviewer,
                                                'changed_fields',
                                                (SELECT coalesce(jsonb_agg(k ORDER BY k), '[]'::jsonb)
                                                   FROM jsonb_object_keys(NEW.changes) AS k),
                                                'reason', NEW.reason)
                             || CASE WHEN NEW.action = 'reprocess'
                                     THEN jsonb_build_object('transcription_provider',
                                                             NEW.transcription_provider,
                                                             'extraction_provider',
                                                             NEW.extraction_provider)
                                     ELSE '{}'::jsonb END,
                             NEW.document_id::text);
  RETURN NULL;
END;
$fn$;
