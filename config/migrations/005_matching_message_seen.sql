-- The matching stage's net, as the ingestion's (migration 002): the last time the document's
-- matching message was known to exist: made (the completion that queued it, a rescue), received
-- (each claim), kept invisible (lease renewal) or given back (a release, a back-off). A pending
-- document not seen for longer than any invisibility the queue gives its message lost it (e.g. a
-- message given back as often as the queue's redrive allows went to the dead-letter queue before
-- a delivery could count): the sweeper sends it again. Existing rows count as seen now.
ALTER TABLE document ADD COLUMN matching_message_seen_at timestamptz NOT NULL DEFAULT now();

-- The sweep: pending documents by when their message was last seen.
CREATE INDEX document_matching_pending_seen_idx ON document (matching_message_seen_at)
  WHERE matching_status = 'pending';
