-- The initial schema: documents and their ingestions, the audit trail, and the Postgres-backed
-- queue. Schema-agnostic: objects land in search_path's schema.

-- A unique piece of content, deduplicated by hash per tenant.
CREATE TABLE document (
  id                 uuid PRIMARY KEY,
  tenant_id          uuid NOT NULL,
  content_hash       text NOT NULL,
  file_path          text NOT NULL,
  mime_type          text,
  structured_data    jsonb,
  needs_human_review boolean NOT NULL DEFAULT false,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT document_tenant_content_hash_key UNIQUE (tenant_id, content_hash)
);

-- "ingestd status": documents waiting for a human.
CREATE INDEX document_needs_review_idx ON document (created_at) WHERE needs_human_review;

-- One processing request for a document, with the fenced claim of the worker processing it.
CREATE TABLE ingestion (
  id                          uuid PRIMARY KEY,
  document_id                 uuid NOT NULL REFERENCES document (id),
  doc_source_id               uuid,
  uploaded_by                 uuid,
  status                      text NOT NULL DEFAULT 'in-progress',
  attempt_count               integer NOT NULL DEFAULT 0,
  source_metadata             jsonb,
  transcription_file_path     text,
  preprocessed_file_path      text,
  transcription_quality_score numeric,
  structured_data             jsonb,
  valid_structured_data       boolean,
  extraction_input_tokens     integer,
  extraction_output_tokens    integer,
  extraction_model            text,
  started_at                  timestamptz,
  completed_at                timestamptz,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  -- Fencing: every write after the claim carries the token.
  claim_token                 uuid,
  lease_expires_at            timestamptz,
  claimed_by                  text,
  last_error                  text,
  error_class                 text,
  -- When some worker should next pick it up: set at enqueue, pushed to now() + retry delay on a
  -- transient failure; the sweeper rescues in-progress rows long past due.
  due_at                      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT ingestion_status_check CHECK (status IN ('in-progress', 'completed', 'failed')),
  CONSTRAINT ingestion_source_xor CHECK ((doc_source_id IS NULL) <> (uploaded_by IS NULL)),
  CONSTRAINT ingestion_attempt_count_check CHECK (attempt_count >= 0),
  CONSTRAINT ingestion_error_class_check
    CHECK (error_class IS NULL OR error_class IN ('transient', 'permanent', 'claim_lost'))
);

CREATE INDEX ingestion_document_idx ON ingestion (document_id);
-- The sweeper: in-progress rows by due_at.
CREATE INDEX ingestion_in_progress_due_idx ON ingestion (due_at) WHERE status = 'in-progress';
-- Status: oldest in-progress ingestion.
CREATE INDEX ingestion_in_progress_created_idx ON ingestion (created_at)
  WHERE status = 'in-progress';
-- Status: counts by status, failures by error class.
CREATE INDEX ingestion_status_class_idx ON ingestion (status, error_class);

-- The outcome of an ingestion propagates to its document. On completion the document takes the
-- ingestion's structured_data and needs a human when valid_structured_data is false. On failure
-- needs_human_review is true: a failed ingestion always needs a human, even when
-- valid_structured_data is NULL, and a failure keeps the document's earlier structured_data unless
-- the failed attempt left output for the reviewer.
CREATE FUNCTION update_document_from_ingestion() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.status = 'failed' THEN
    UPDATE document
       SET structured_data = COALESCE(NEW.structured_data, structured_data),
           needs_human_review = true,
           updated_at = now()
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

CREATE TRIGGER ingestion_update_document
  AFTER UPDATE OF structured_data, valid_structured_data, status ON ingestion
  FOR EACH ROW
  WHEN (NEW.status IN ('completed', 'failed')
        AND (OLD.status IS DISTINCT FROM NEW.status
             OR OLD.structured_data IS DISTINCT FROM NEW.structured_data
             OR OLD.valid_structured_data IS DISTINCT FROM NEW.valid_structured_data))
  EXECUTE FUNCTION update_document_from_ingestion();

-- The audit trail: one row per pipeline step outcome. No foreign key: a malformed or unknown
-- ingestion id from the queue is worth recording too.
CREATE TABLE ingestion_event (
  id           bigserial PRIMARY KEY,
  ingestion_id uuid NOT NULL,
  step         text NOT NULL,
  outcome      text NOT NULL,
  detail       text,
  duration_ms  bigint,
  worker_id    text,
  at           timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX ingestion_event_ingestion_idx ON ingestion_event (ingestion_id, at);

-- The Postgres-backed queue with SQS semantics. A message is visible when visible_at <= now();
-- a receive sets a fresh receipt and pushes visible_at by the visibility timeout; a delete removes
-- the row; redrive to a dead-letter queue rewrites queue_name. Rows churn constantly, so vacuum
-- must keep the head of the dequeue index clean (REFERENCE "PostgreSQL as a queue").
CREATE TABLE queue_message (
  id            uuid PRIMARY KEY,
  queue_name    text NOT NULL,
  body          text NOT NULL,
  receipt       uuid,
  receive_count integer NOT NULL DEFAULT 0,
  visible_at    timestamptz NOT NULL DEFAULT now(),
  sent_at       timestamptz NOT NULL DEFAULT now()
) WITH (
  autovacuum_vacuum_scale_factor = 0,
  autovacuum_vacuum_threshold = 200,
  autovacuum_vacuum_insert_scale_factor = 0,
  autovacuum_vacuum_insert_threshold = 1000,
  autovacuum_analyze_scale_factor = 0,
  autovacuum_analyze_threshold = 500,
  autovacuum_vacuum_cost_delay = 0,
  fillfactor = 70
);

-- The dequeue predicate and order: queue_name = $1 AND visible_at <= now() ORDER BY visible_at, id
-- (REFERENCE's planner trap: never walk the primary key). It carries no partial predicate because
-- there is nothing to exclude: a finished message is deleted, not flagged, and a redriven one
-- changes queue_name; visibility depends on now(), which an index predicate cannot use.
CREATE INDEX queue_message_dequeue_idx ON queue_message (queue_name, visible_at, id);
CREATE UNIQUE INDEX queue_message_receipt_idx ON queue_message (receipt) WHERE receipt IS NOT NULL;

-- Long poll: consumers LISTEN on one channel and wake when a message of their queue becomes
-- visible now (a send, a visibility change to an earlier time, a redrive into it).
CREATE FUNCTION queue_message_notify() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify('ingestd_queue', NEW.queue_name);
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER queue_message_notify_insert
  AFTER INSERT ON queue_message
  FOR EACH ROW EXECUTE FUNCTION queue_message_notify();

CREATE TRIGGER queue_message_notify_update
  AFTER UPDATE OF visible_at, queue_name ON queue_message
  FOR EACH ROW
  WHEN (NEW.visible_at < OLD.visible_at OR NEW.queue_name IS DISTINCT FROM OLD.queue_name)
  EXECUTE FUNCTION queue_message_notify();
