-- The review desk (migration 007) in the status event stream (migration 009): every decision a
-- reviewer saves is a REVIEW_COMPLETED event, written in the decision's own transaction.
CREATE FUNCTION ingestd_review_completed_event() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM ingestd_emit_event('REVIEW_COMPLETED', NEW.tenant_id, NEW.document_id, NEW.ingestion_id,
                             jsonb_build_object('action', NEW.action, 'reviewer', NEW.reviewer,
                                                'changed_fields',
                                                (SELECT coalesce(jsonb_agg(k ORDER BY k), '[]'::jsonb)
                                                   FROM jsonb_object_keys(NEW.changes) AS k),
                                                'reason', NEW.reason),
                             NEW.document_id::text);
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER document_review_completed_event AFTER INSERT ON document_review
  FOR EACH ROW EXECUTE FUNCTION ingestd_review_completed_event();
