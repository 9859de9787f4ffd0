-- Batches: a named set of a tenant's submissions (`ingestd submit --batch NAME`, the HTTP
-- intake's X-Batch header) whose progress is counted as its ingestions change state, container
-- children included. A batch is open while documents are added and sealed when its submitter
-- is done; it finishes when it is sealed and none of its ingestions is in progress, decided in
-- the transaction of that last change (the ingestion's, or the seal's), which emits
-- BATCH_FINISHED with the counts. A retry that runs a finished batch's ingestion again opens it
-- again, and it finishes (and says so) once more. Additive: older nodes keep running.
CREATE TABLE batch (
  id           uuid PRIMARY KEY,
  tenant_id    uuid NOT NULL,
  name         text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  sealed_at    timestamptz,
  finished_at  timestamptz,
  -- Ingestions in the batch, children included, and how many are in each state.
  documents    integer NOT NULL DEFAULT 0,
  in_progress  integer NOT NULL DEFAULT 0,
  completed    integer NOT NULL DEFAULT 0,
  for_review   integer NOT NULL DEFAULT 0,
  failed       integer NOT NULL DEFAULT 0,
  skipped      integer NOT NULL DEFAULT 0,
  cancelled    integer NOT NULL DEFAULT 0,
  -- Files submitted to the batch whose content the tenant had (no new ingestion).
  duplicates   integer NOT NULL DEFAULT 0,
  UNIQUE (tenant_id, name)
);
CREATE INDEX batch_created_idx ON batch (created_at);

ALTER TABLE ingestion ADD COLUMN batch_id uuid REFERENCES batch (id);
CREATE INDEX ingestion_batch_idx ON ingestion (batch_id, status) WHERE batch_id IS NOT NULL;

-- The batch count an ingestion's state falls under.
CREATE FUNCTION ingestd_batch_bucket(p_status text, p_valid boolean) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE p_status
           WHEN 'completed' THEN CASE WHEN COALESCE(p_valid, true) THEN 'completed'
                                      ELSE 'for_review' END
           ELSE p_status END
$fn$;

-- The batch's figures as an event payload and as `ingestd batches --json` shows them.
CREATE FUNCTION ingestd_batch_json(b batch) RETURNS jsonb
LANGUAGE sql STABLE AS $fn$
  SELECT jsonb_build_object(
    'batch_id', b.id, 'tenant_id', b.tenant_id, 'name', b.name,
    'state', CASE WHEN b.finished_at IS NOT NULL THEN 'finished'
                  WHEN b.sealed_at IS NOT NULL THEN 'sealed' ELSE 'open' END,
    'created_at', b.created_at, 'sealed_at', b.sealed_at, 'finished_at', b.finished_at,
    'documents', b.documents, 'in_progress', b.in_progress, 'completed', b.completed,
    'for_review', b.for_review, 'failed', b.failed, 'skipped', b.skipped,
    'cancelled', b.cancelled, 'duplicates', b.duplicates)
$fn$;

-- Finishes a sealed batch with nothing in progress (BATCH_FINISHED), or opens again a finished
-- one that has work in progress again. The caller holds the batch's row lock (its UPDATE).
CREATE FUNCTION ingestd_batch_settle(b batch) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  IF b.in_progress = 0 AND b.sealed_at IS NOT NULL AND b.finished_at IS NULL THEN
    UPDATE batch SET finished_at = clock_timestamp() WHERE id = b.id RETURNING * INTO b;
    PERFORM ingestd_emit_event('BATCH_FINISHED', b.tenant_id, NULL, NULL, ingestd_batch_json(b),
                               'batch:' || b.id::text);
  ELSIF b.in_progress > 0 AND b.finished_at IS NOT NULL THEN
    UPDATE batch SET finished_at = NULL WHERE id = b.id;
  END IF;
END;
$fn$;

-- Seals a batch (of p_tenant when given): no more documents are coming. Answers it, finished
-- when nothing of it is in progress; nothing when there is no such batch.
CREATE FUNCTION ingestd_batch_seal(p_id uuid, p_tenant uuid) RETURNS SETOF batch
LANGUAGE plpgsql AS $fn$
DECLARE
  b batch;
BEGIN
  UPDATE batch SET sealed_at = COALESCE(sealed_at, clock_timestamp())
   WHERE id = p_id AND (p_tenant IS NULL OR tenant_id = p_tenant)
  RETURNING * INTO b;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM ingestd_batch_settle(b);
  RETURN QUERY SELECT * FROM batch WHERE id = p_id;
END;
$fn$;

-- Moves one ingestion of a batch from one count to another (p_from NULL: a new member; p_to
-- NULL: a member erased).
CREATE FUNCTION ingestd_batch_count(p_batch uuid, p_from text, p_to text) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  b batch;
BEGIN
  UPDATE batch
     SET documents   = documents + (p_from IS NULL)::int - (p_to IS NULL)::int,
         in_progress = in_progress + (COALESCE(p_to, '') = 'in-progress')::int
                       - (COALESCE(p_from, '') = 'in-progress')::int,
         completed   = completed + (COALESCE(p_to, '') = 'completed')::int
                       - (COALESCE(p_from, '') = 'completed')::int,
         for_review  = for_review + (COALESCE(p_to, '') = 'for_review')::int
                       - (COALESCE(p_from, '') = 'for_review')::int,
         failed      = failed + (COALESCE(p_to, '') = 'failed')::int
                       - (COALESCE(p_from, '') = 'failed')::int,
         skipped     = skipped + (COALESCE(p_to, '') = 'skipped')::int
                       - (COALESCE(p_from, '') = 'skipped')::int,
         cancelled   = cancelled + (COALESCE(p_to, '') = 'cancelled')::int
                       - (COALESCE(p_from, '') = 'cancelled')::int
   WHERE id = p_batch
  RETURNING * INTO b;
  IF FOUND THEN
    PERFORM ingestd_batch_settle(b);
  END IF;
END;
$fn$;

CREATE FUNCTION ingestd_batch_member_added() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM ingestd_batch_count(NEW.batch_id, NULL,
                              ingestd_batch_bucket(NEW.status, NEW.valid_structured_data));
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER ingestion_batch_added AFTER INSERT ON ingestion
  FOR EACH ROW WHEN (NEW.batch_id IS NOT NULL)
  EXECUTE FUNCTION ingestd_batch_member_added();

CREATE FUNCTION ingestd_batch_member_changed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM ingestd_batch_count(NEW.batch_id,
                              ingestd_batch_bucket(OLD.status, OLD.valid_structured_data),
                              ingestd_batch_bucket(NEW.status, NEW.valid_structured_data));
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER ingestion_batch_changed AFTER UPDATE OF status, valid_structured_data ON ingestion
  FOR EACH ROW
  WHEN (NEW.batch_id IS NOT NULL
        AND ingestd_batch_bucket(OLD.status, OLD.valid_structured_data)
            IS DISTINCT FROM ingestd_batch_bucket(NEW.status, NEW.valid_structured_data))
  EXECUTE FUNCTION ingestd_batch_member_changed();

CREATE FUNCTION ingestd_batch_member_erased() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM ingestd_batch_count(OLD.batch_id,
                              ingestd_batch_bucket(OLD.status, OLD.valid_structured_data), NULL);
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER ingestion_batch_erased AFTER DELETE ON ingestion
  FOR EACH ROW WHEN (OLD.batch_id IS NOT NULL)
  EXECUTE FUNCTION ingestd_batch_member_erased();

-- BATCH_STARTED, as a batch is first recorded.
CREATE FUNCTION ingestd_batch_started() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM ingestd_emit_event('BATCH_STARTED', NEW.tenant_id, NULL, NULL,
                             jsonb_build_object('batch_id', NEW.id, 'name', NEW.name),
                             'batch:' || NEW.id::text);
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER batch_started AFTER INSERT ON batch
  FOR EACH ROW EXECUTE FUNCTION ingestd_batch_started();
