-- The audit trail is stored as one row per write, with one array element per step, instead of one
-- row per step. A job writes its steps (ten for an ingestion) with the state change they lead to:
-- as rows (a heap tuple, two index entries and a sequence value each) that took 48-49 us of
-- database CPU per document in bench/orchestration, as one row of arrays 20-23 us.
--
-- `ingestion_event` stays what readers see, now a view with a row per step and the same columns:
-- each step keeps an id of its own, in the order of the writes and of the steps within a write,
-- and its own time. A write takes a block of 1,000 ids from the same sequence (one sequence
-- value), its steps the first of them; a longer write is split (pg::add_audit_params), and the
-- table refuses one. A single step inserted into the view (intake, the review desk, a claim's
-- crash) becomes a row of one element through its INSTEAD OF trigger. Retention and erasure
-- delete rows of `audit_trail`.
CREATE TABLE audit_trail (
  ingestion_id uuid NOT NULL,
  -- The id of the first step; the others follow it.
  first_id     bigint NOT NULL,
  steps        text[] NOT NULL CHECK (cardinality(steps) BETWEEN 1 AND 1000),
  outcomes     text[] NOT NULL,
  details      text[] NOT NULL,
  durations    bigint[] NOT NULL,
  workers      text[] NOT NULL,
  ats          timestamptz[] NOT NULL,
  -- When the row was written, at or after its steps' times: retention goes by it.
  written_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_trail_ingestion_idx ON audit_trail (ingestion_id);
-- One row per job, only ever read by key (migration 034's reasoning).
ALTER TABLE audit_trail SET (autovacuum_analyze_threshold = 50000);

ALTER SEQUENCE ingestion_event_id_seq OWNED BY NONE;
-- Blocks of 1,000 ids from here on, after every id given so far.
ALTER SEQUENCE ingestion_event_id_seq INCREMENT BY 1000;
INSERT INTO audit_trail (ingestion_id, first_id, steps, outcomes, details, durations, workers, ats,
                         written_at)
SELECT ingestion_id, id, ARRAY[step], ARRAY[outcome], ARRAY[detail], ARRAY[duration_ms],
       ARRAY[worker_id], ARRAY[at], at
  FROM ingestion_event
 ORDER BY id;
DROP FUNCTION ingestd_append_audit(uuid[], text[], text[], text[], bigint[], text[], bigint[]);
DROP TABLE ingestion_event;

CREATE VIEW ingestion_event AS
SELECT t.first_id + e.ord - 1 AS id, t.ingestion_id, e.step, e.outcome, e.detail, e.duration_ms,
       e.worker_id, e.at
  FROM audit_trail AS t
 CROSS JOIN LATERAL unnest(t.steps, t.outcomes, t.details, t.durations, t.workers, t.ats)
         WITH ORDINALITY AS e(step, outcome, detail, duration_ms, worker_id, at, ord);
ALTER VIEW ingestion_event ALTER COLUMN id SET DEFAULT nextval('ingestion_event_id_seq');
ALTER VIEW ingestion_event ALTER COLUMN at SET DEFAULT now();

CREATE FUNCTION ingestd_audit_step_added() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO audit_trail (ingestion_id, first_id, steps, outcomes, details, durations, workers,
                           ats, written_at)
  VALUES (NEW.ingestion_id, NEW.id, ARRAY[NEW.step], ARRAY[NEW.outcome], ARRAY[NEW.detail],
          ARRAY[NEW.duration_ms], ARRAY[NEW.worker_id], ARRAY[NEW.at], NEW.at);
  RETURN NEW;
END;
$fn$;
CREATE TRIGGER ingestion_event_step_added INSTEAD OF INSERT ON ingestion_event
  FOR EACH ROW EXECUTE FUNCTION ingestd_audit_step_added();

-- Appends the steps of a batch of writes in the caller's transaction; answers how many steps. One
-- element of each array per write: its ingestion (or the match stage's document), then each of
-- its columns as an array literal (pg::add_audit_params), the times in ms since the epoch (0: now).
-- PL/pgSQL keeps the statement's plan for the session; a SQL function would plan it at every call
-- (0.35 ms more per call: a match job's completion, which writes its trail alone, took 1.08 ms
-- instead of 0.73).
CREATE FUNCTION ingestd_append_audit(p_items uuid[], p_steps text[], p_outcomes text[],
                                     p_details text[], p_durations text[], p_workers text[],
                                     p_ats text[])
RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  v_count integer;
BEGIN
  WITH written AS (
    INSERT INTO audit_trail (ingestion_id, first_id, steps, outcomes, details, durations, workers,
                             ats)
    SELECT w.item, nextval('ingestion_event_id_seq'), w.steps::text[], w.outcomes::text[],
           w.details::text[], w.durations::bigint[], w.workers::text[],
           ARRAY(SELECT CASE WHEN a > 0 THEN to_timestamp(a / 1000.0) ELSE now() END
                   FROM unnest(w.ats::bigint[]) AS a)
      FROM unnest(p_items, p_steps, p_outcomes, p_details, p_durations, p_workers, p_ats)
           AS w(item, steps, outcomes, details, durations, workers, ats)
    RETURNING cardinality(steps) AS n
  )
  SELECT COALESCE(sum(n), 0)::integer INTO v_count FROM written;
  RETURN v_count;
END;
$fn$;
