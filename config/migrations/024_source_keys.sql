-- A channel's own name for what it delivered (a mailbox message's Message-ID, a bucket object's
-- key), kept in ingestion.source_metadata as "source_key": intake finds an earlier ingestion of
-- the tenant's by it, so that the same message or object is taken once even when its bytes differ.
CREATE INDEX IF NOT EXISTS ingestion_source_key
    ON ingestion ((source_metadata->>'source_key'))
 WHERE source_metadata ? 'source_key';
