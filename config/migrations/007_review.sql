-- The review desk: a person's decision on a document that needs one. The machine's
-- extraction stays on its ingestion; the reviewer's version is kept here beside it and becomes
-- the document's structured_data. review_version is the document's optimistic-concurrency token:
-- every change of what a reviewer sees bumps it, so a save made on an older version is refused.

ALTER TABLE document ADD COLUMN review_version bigint NOT NULL DEFAULT 0;
-- 'approved' | 'rejected' | 'reprocessing' after a reviewer acted; NULL before.
ALTER TABLE document ADD COLUMN review_status text;
ALTER TABLE document ADD COLUMN reviewed_by text;
ALTER TABLE document ADD COLUMN reviewed_at timestamptz;
ALTER TABLE document ADD CONSTRAINT document_review_status_check
  CHECK (review_status IS NULL OR review_status IN ('approved', 'rejected', 'reprocessing'));

CREATE FUNCTION document_bump_review_version() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.structured_data IS DISTINCT FROM OLD.structured_data
     OR NEW.needs_human_review IS DISTINCT FROM OLD.needs_human_review
     OR NEW.review_status IS DISTINCT FROM OLD.review_status
     OR NEW.reviewed_at IS DISTINCT FROM OLD.reviewed_at THEN
    NEW.review_version := OLD.review_version + 1;
  END IF;
  RETURN NEW;
END;
$fn$;

CREATE TRIGGER document_review_version
  BEFORE UPDATE OF structured_data, needs_human_review, review_status, reviewed_at ON document
  FOR EACH ROW EXECUTE FUNCTION document_bump_review_version();

-- One row per reviewer action: who, when, what, and the data before and after.
CREATE TABLE document_review (
  id             bigserial PRIMARY KEY,
  document_id    uuid NOT NULL REFERENCES document (id) ON DELETE CASCADE,
  tenant_id      uuid NOT NULL,
  action         text NOT NULL,
  reviewer       text NOT NULL,
  -- The document's review_version the reviewer saw.
  based_on_version bigint NOT NULL,
  -- The document's structured_data before (the machine's, or an earlier reviewer's) and after.
  machine_data   jsonb,
  reviewed_data  jsonb,
  -- {"field": {"from": ..., "to": ...}} for the fields the reviewer changed.
  changes        jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Plausibility checks that failed on the approved data (approved all the same).
  warnings       jsonb NOT NULL DEFAULT '[]'::jsonb,
  reason         text,
  -- A reprocess: the ingestion it created.
  ingestion_id   uuid,
  at             timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT document_review_action_check CHECK (action IN ('approve', 'reject', 'reprocess'))
);

CREATE INDEX document_review_document_idx ON document_review (document_id, at);
-- The desk's queue: a tenant's documents needing review, oldest first.
CREATE INDEX document_review_queue_idx ON document (tenant_id, created_at) WHERE needs_human_review;
