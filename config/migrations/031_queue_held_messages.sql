-- A received message leaves the index that receives walk. The rank index (migration 010) held
-- every message of a queue, those in flight too: they have the lowest ranks (they were taken
-- first), so each receive walked past all of them, reading each row to find its visible_at in
-- the future (3.5 ms a receive at 10,000 in flight, which capped what a node admitted). Now:
--   - `held`: received and not given up since (a receive sets it; a redrive to the dead-letter
--     queue clears it). A visibility change keeps it: the message stays in the held index, due
--     at its new visible_at;
--   - the ready index: the messages not held, by rank (a new message, one delayed at send);
--   - the held index: the held messages by the moment they become visible again (a lease that
--     ran out, a give-back, a retry's back-off), which a receive reads from its head.
-- A receive takes the best-ranked of both, so priorities and fair shares rank as before.
ALTER TABLE queue_message ADD COLUMN held boolean NOT NULL DEFAULT false;
UPDATE queue_message SET held = true WHERE receipt IS NOT NULL;
CREATE INDEX queue_message_ready_idx ON queue_message (queue_name, rank, id) WHERE NOT held;
CREATE INDEX queue_message_held_idx ON queue_message (queue_name, visible_at) WHERE held;
-- Every receive rewrites a row's index entries (visible_at changes): one index fewer to write.
-- A node of an earlier version still receives correctly, through the dequeue index.
DROP INDEX queue_message_rank_idx;
