-- A document that crashes its worker ends `failed` with error class 'poison' instead of looping,
-- and the sweeper rescues only ingestions whose queue message is truly gone (message_seen_at).

-- Whose claim ended how: every deliberate end of a claim (an outcome, a failure, a give-back at
-- shutdown or under load) clears claim_token. A claim whose token is still set after its lease
-- expired therefore ended in a crash; the next claim counts it as an attempt and, at the limit,
-- fails the ingestion with this class (pg_repository's claim statement).
ALTER TABLE ingestion DROP CONSTRAINT ingestion_error_class_check;
ALTER TABLE ingestion ADD CONSTRAINT ingestion_error_class_check
  CHECK (error_class IS NULL OR error_class IN ('transient', 'permanent', 'claim_lost', 'poison'));

-- The last time the ingestion's queue message was known to exist: sent (intake, here the row's
-- creation; the sweeper's re-enqueue), received (each claim, granted or not), kept invisible
-- (lease renewal, in step with the heartbeat's visibility extension) or given back. Existing rows
-- count as seen now.
ALTER TABLE ingestion ADD COLUMN message_seen_at timestamptz NOT NULL DEFAULT now();
