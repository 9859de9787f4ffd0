-- The node registry (migration 006) shows what each node serves and uses: the size classes of
-- its ingest stage and its capacity usage (weighted slots in use over worker.capacity_slots, or
-- jobs over worker.max_in_flight without a slot budget), refreshed with the heartbeat. Additive:
-- older nodes keep running and leave the defaults.
ALTER TABLE worker_node
  -- The size classes served, comma-separated ("small,large"; empty: no classes).
  ADD COLUMN classes text NOT NULL DEFAULT '',
  ADD COLUMN capacity_usage real NOT NULL DEFAULT 0;
