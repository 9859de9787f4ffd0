-- Next jobs and events leave through an outbox: a row written in the transaction
-- that changes the state, sent by the relay actor (actors/relay.cpp) at least once, marked sent,
-- and pruned after a retention. On the Postgres queue a next job is a queue_message row written
-- in that same transaction instead; the outbox serves SQS and, later, the status event stream.
CREATE TABLE event_outbox (
  id            bigserial PRIMARY KEY,
  -- A queue name (next jobs) or, later, an event sink.
  destination   text NOT NULL,
  body          text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  -- A relay holds the row while it sends it; a relay that died leaves it to the next after this.
  claimed_until timestamptz,
  attempts      integer NOT NULL DEFAULT 0,
  last_error    text,
  sent_at       timestamptz
);

-- The relay's scan: unsent rows, oldest first.
CREATE INDEX event_outbox_unsent_idx ON event_outbox (id) WHERE sent_at IS NULL;
-- The pruning: sent rows by age.
CREATE INDEX event_outbox_sent_idx ON event_outbox (sent_at) WHERE sent_at IS NOT NULL;

-- The queues of the Postgres queue backend that `ingestd queues create` made, with their
-- dead-letter redrive; a node refuses to start on a queue that is not here.
CREATE TABLE queue (
  name              text PRIMARY KEY,
  dead_letter_queue text,
  max_receive_count integer NOT NULL DEFAULT 0 CHECK (max_receive_count >= 0),
  created_at        timestamptz NOT NULL DEFAULT now()
);
