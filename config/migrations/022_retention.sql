-- Retention (retention.*): the node prunes documents' objects and audit rows past their age, in
-- batches, oldest first. A pruned original or derived object leaves storage; its row keeps its
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
