-- ingestd-min-node-version: 0.1.0
-- The cluster's node registry: every `ingestd run` registers here, refreshes
-- its row with the heartbeat and reads drain requests from it. Additive: older nodes ignore it.
--
-- The header line above is the oldest node version this migration stays compatible with: the
-- migrator records it in schema_migrations and a node older than any recorded minimum refuses to
-- start (deploy/OPERATIONS.md, "Rolling upgrade"). A migration without the line keeps every node.
CREATE TABLE worker_node (
  -- worker.id, else host-pid; a restarted node with the same id takes the row over.
  id                 text PRIMARY KEY,
  -- A fresh value per start: refreshes of an older process with the same id no longer match.
  incarnation        uuid NOT NULL,
  host               text NOT NULL,
  pid                integer NOT NULL,
  version            text NOT NULL,
  -- The stages served, comma-separated (e.g. "ingest,match").
  stages             text NOT NULL,
  capacity           integer NOT NULL,
  in_flight          integer NOT NULL DEFAULT 0,
  -- Jobs finished (completed or failed) in the minute before the last refresh.
  done_last_minute   integer NOT NULL DEFAULT 0,
  -- The node's lease: not seen for this long (and not stopped) reads as lost.
  lease_seconds      integer NOT NULL,
  started_at         timestamptz NOT NULL DEFAULT now(),
  last_seen          timestamptz NOT NULL DEFAULT now(),
  state              text NOT NULL DEFAULT 'running'
                       CHECK (state IN ('running', 'draining', 'stopped')),
  -- Set by `ingestd drain`; the node sees it on its next refresh and drains.
  drain_requested_at timestamptz
);

-- Pruning stopped and lost rows by age.
CREATE INDEX worker_node_last_seen_idx ON worker_node (last_seen);
