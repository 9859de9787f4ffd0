-- A reprocess from the review desk may choose the providers of its new ingestion: the
-- transcription and the extraction provider the job runs with. NULL, as on every ingestion intake
-- makes, is the configured provider of the node that takes the ingestion. The review row keeps
-- the choice beside the decision, and REVIEW_COMPLETED names it.
-- Additive, without a minimum node version: a node older than this migration claims such an
-- ingestion like any other and runs it with its own configured providers (it never reads the
-- columns). deploy/OPERATIONS.md says so under the rolling upgrade.
ALTER TABLE ingestion ADD COLUMN transcription_provider text
  CONSTRAINT ingestion_transcription_provider_check
  CHECK (transcription_provider IN ('tesseract', 'document_ai'));
ALTER TABLE ingestion ADD COLUMN extraction_provider text
  CONSTRAINT ingestion_extraction_provider_check CHECK (extraction_provider IN ('local', 'llm'));

ALTER TABLE document_review ADD COLUMN transcription_provider text;
ALTER TABLE document_review ADD COLUMN extraction_provider text;

-- Migration 012's event, with the providers a reprocess chose (null: as configured).
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
