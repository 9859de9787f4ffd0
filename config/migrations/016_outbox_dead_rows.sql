-- Outbox rows that never deliver end: after outbox.max_attempts failed sends a row is dead
-- (dead_at set, its last error kept); the relay takes it no more until `ingestd events
-- redeliver` gives it back, and the pruning deletes it once it has been dead for the retention.
ALTER TABLE event_outbox ADD COLUMN dead_at timestamptz;

-- The relay's scan: rows still to send, oldest first (dead ones left out).
DROP INDEX event_outbox_unsent_idx;
CREATE INDEX event_outbox_pending_idx ON event_outbox (id) WHERE sent_at IS NULL AND dead_at IS NULL;
-- `ingestd events --dead`, the dead-row figure and their pruning.
CREATE INDEX event_outbox_dead_idx ON event_outbox (dead_at) WHERE dead_at IS NOT NULL;
-- One document's events go out through one relay at a time under a session advisory lock on
-- (destination, ordering key), which the relay takes with the rows; the old check of an earlier
-- held row (a hold that runs out let a second relay split a document's events) is gone.
DROP INDEX event_outbox_order_idx;
CREATE INDEX event_outbox_key_idx ON event_outbox (destination, ordering_key, id)
  WHERE sent_at IS NULL AND dead_at IS NULL AND ordering_key IS NOT NULL;
