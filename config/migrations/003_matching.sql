-- The matching stage: each document's matching status with a fenced claim like the
-- ingestion's, its cluster, and the match edges between documents.

-- matching_status: NULL (not queued), pending, in-progress, succeeded, failed.
ALTER TABLE document ADD COLUMN matching_status text;
ALTER TABLE document ADD COLUMN matching_error text;
ALTER TABLE document ADD COLUMN matching_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE document ADD COLUMN matching_failed_at timestamptz;
ALTER TABLE document ADD CONSTRAINT document_matching_status_check
  CHECK (matching_status IS NULL
         OR matching_status IN ('pending', 'in-progress', 'succeeded', 'failed'));
-- The claim of the worker matching it, fenced as an ingestion's is.
ALTER TABLE document ADD COLUMN matching_claim_token uuid;
ALTER TABLE document ADD COLUMN matching_claimed_by text;
ALTER TABLE document ADD COLUMN matching_lease_expires_at timestamptz;
ALTER TABLE document ADD COLUMN matching_started_at timestamptz;
-- The smallest document id of its connected component of match edges.
ALTER TABLE document ADD COLUMN cluster_id uuid;

-- Status: matching in progress for longer than 10 minutes (a crashed worker); the claim's start
-- and lease, among few rows.
CREATE INDEX document_matching_in_progress_idx ON document (matching_started_at)
  WHERE matching_status = 'in-progress';
-- Status: documents by matching status.
CREATE INDEX document_matching_status_idx ON document (matching_status)
  WHERE matching_status IS NOT NULL;
-- A cluster's members (ingestd matches, the write phase's affected set).
CREATE INDEX document_cluster_idx ON document (cluster_id) WHERE cluster_id IS NOT NULL;

-- The pre-processing writes (adapters/matching's match_features, safe to redo): what candidate
-- retrieval searches and the matcher compares. features_at is set when they are stored; only
-- documents with features are candidates.
ALTER TABLE document ADD COLUMN match_kind text;
ALTER TABLE document ADD COLUMN match_number text;
ALTER TABLE document ADD COLUMN match_counterparty text;
ALTER TABLE document ADD COLUMN normalized_counterparty text;
ALTER TABLE document ADD COLUMN normalized_references text[];
ALTER TABLE document ADD COLUMN match_total numeric;
ALTER TABLE document ADD COLUMN match_currency text;
ALTER TABLE document ADD COLUMN match_date date;
ALTER TABLE document ADD COLUMN searchable_text text;
ALTER TABLE document ADD COLUMN text_hash text;
ALTER TABLE document ADD COLUMN features_at timestamptz;

-- pg_trgm for the counterparty's similarity. An extension belongs to the database, not to a
-- schema: it goes to public once, where every schema's statements reach it schema-qualified
-- (public.gin_trgm_ops, OPERATOR(public.%), public.similarity()) whatever their search_path.
-- Two migrators in two schemas would race on CREATE EXTENSION (IF NOT EXISTS does not make it
-- atomic): a database-wide transaction lock makes the second wait and then find it.
SELECT pg_advisory_xact_lock(1769106, 0);
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;

-- Candidate retrieval (pg_matching_repository's candidates statement), within a tenant: the same
-- content, numbers either way, the counterparty's trigrams, total and date proximity.
CREATE INDEX document_match_trgm_idx ON document
  USING gin (normalized_counterparty public.gin_trgm_ops)
  WHERE features_at IS NOT NULL;
CREATE INDEX document_match_references_idx ON document USING gin (normalized_references)
  WHERE features_at IS NOT NULL;
CREATE INDEX document_match_number_idx ON document (tenant_id, match_number)
  WHERE features_at IS NOT NULL AND match_number IS NOT NULL;
CREATE INDEX document_match_text_hash_idx ON document (tenant_id, text_hash)
  WHERE features_at IS NOT NULL AND text_hash IS NOT NULL;
CREATE INDEX document_match_total_idx ON document (tenant_id, match_total)
  WHERE features_at IS NOT NULL AND match_total IS NOT NULL;
CREATE INDEX document_match_date_idx ON document (tenant_id, match_date)
  WHERE features_at IS NOT NULL AND match_date IS NOT NULL;

-- The match edges: the pair stored once (a < b), either document's edges found by a's primary
-- key or b's index. Deleting a document deletes its edges.
CREATE TABLE document_match (
  document_a_id uuid NOT NULL REFERENCES document (id) ON DELETE CASCADE,
  document_b_id uuid NOT NULL REFERENCES document (id) ON DELETE CASCADE,
  kind          text NOT NULL,
  confidence    double precision NOT NULL,
  reason        text NOT NULL DEFAULT '',
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (document_a_id, document_b_id),
  CONSTRAINT document_match_pair_once CHECK (document_a_id < document_b_id),
  CONSTRAINT document_match_confidence_check CHECK (confidence >= 0 AND confidence <= 1)
);

CREATE INDEX document_match_b_idx ON document_match (document_b_id);
