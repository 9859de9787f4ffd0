-- The matching stage (seed 003): each document's matching status with a fenced claim like the
-- ingestion's, its cluster, and the match edges between documents.

-- Seed 003's columns: NULL (not queued), pending, in-progress, succeeded, failed.
ALTER TABLE document ADD COLUMN matching_status text;
ALTER TABLE document ADD COLUMN matching_error text;
ALTER TABLE document ADD COLUMN matching_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE document ADD COLUMN matching_failed_at timestamptz;
ALTER TABLE document ADD CONSTRAINT document_matching_status_check
  CHECK (matching_status IS NULL
         OR matching_status IN ('pending', 'in-progress', 'succeeded', 'failed'));
-- The claim of the worker matching it (DESIGN §5's fencing, as for ingestions).
ALTER TABLE document ADD COLUMN matching_claim_token uuid;
ALTER TABLE document ADD COLUMN matching_claimed_by text;
ALTER TABLE document ADD COLUMN matching_lease_expires_at timestamptz;
ALTER TABLE document ADD COLUMN matching_started_at timestamptz;
-- The smallest document id of its connected component of match edges.
ALTER TABLE document ADD COLUMN cluster_id uuid;
