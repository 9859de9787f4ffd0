-- Fair scheduling between tenants on the Postgres queue.
--
-- A queue message may carry the tenant whose work it is. Within a priority, a tenant's messages
-- are ranked as if the tenant had sent them no faster than one per `fair_spacing_seconds` /
-- its weight: a message's ranking time is its send time, or the ranking time of the tenant's last
-- message still in the queue at that priority plus the spacing, whichever is later. One tenant's
-- import of 5,000 documents therefore spreads over hours of ranking time, and another tenant's
-- document sent a minute later ranks among the import's first minute, not after all of it. A
-- tenant alone in the queue is served in the order it sent, as before. Priorities still come
-- first: a level is worth `60 / ageing_per_minute` seconds of ranking time (migration 010).
--
-- The receive is unchanged (one walk of the rank index); the cost is one probe of the tenant
-- index per message sent with a tenant. Messages without a tenant (the event stream's queues)
-- rank by their send time alone; so do all messages of a queue with spacing 0 or ageing 0.
-- `ingestd queues create` sets the spacing and the weights from queue.tenant_fair_spacing_seconds
-- and queue.tenant_weights.
ALTER TABLE queue
  ADD COLUMN fair_spacing_seconds double precision NOT NULL DEFAULT 1
    CONSTRAINT queue_fair_spacing_check CHECK (fair_spacing_seconds >= 0),
  -- {"<tenant uuid>": weight}: a tenant of weight 2 is spaced half as far (twice the share).
  ADD COLUMN tenant_weights jsonb NOT NULL DEFAULT '{}';

ALTER TABLE queue_message ADD COLUMN tenant_id uuid;
-- On SQS the relay sends the hand-off with the tenant as its MessageGroupId: a standard queue's
-- fair-queue feature then keeps one tenant's backlog from delaying the others.
ALTER TABLE event_outbox ADD COLUMN tenant_id uuid;

-- The tenant's last ranking time at a priority: max(rank) of its messages still queued there.
CREATE INDEX queue_message_tenant_idx ON queue_message (queue_name, tenant_id, priority, rank)
  WHERE tenant_id IS NOT NULL;

CREATE OR REPLACE FUNCTION queue_message_rank() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  v_rate double precision := 1;
  v_spacing double precision := 0;
  v_weight double precision;
  v_at double precision := extract(epoch FROM NEW.sent_at);
  v_last double precision;
BEGIN
  SELECT q.ageing_per_minute, q.fair_spacing_seconds,
         (q.tenant_weights ->> NEW.tenant_id::text)::double precision
    INTO v_rate, v_spacing, v_weight
    FROM queue AS q WHERE q.name = NEW.queue_name;
  v_rate := COALESCE(v_rate, 1);
  IF NEW.tenant_id IS NOT NULL AND v_rate > 0 AND COALESCE(v_spacing, 0) > 0 THEN
    -- Rows sent earlier in the same statement are seen here: a batch spreads like single sends.
    SELECT m.rank INTO v_last
      FROM queue_message AS m
     WHERE m.queue_name = NEW.queue_name AND m.tenant_id = NEW.tenant_id
       AND m.priority = NEW.priority
     ORDER BY m.rank DESC
     LIMIT 1;
    IF v_last IS NOT NULL THEN
      v_at := greatest(v_at, (v_last - NEW.priority) * 60.0 / v_rate
                             + v_spacing / greatest(COALESCE(v_weight, 1), 0.001));
    END IF;
  END IF;
  NEW.rank := NEW.priority + v_rate / 60.0 * v_at;
  RETURN NEW;
END;
$fn$;

-- Hand-offs carry the tenant of the work item they send.
DROP FUNCTION ingestd_send(text, text, integer, boolean);
CREATE FUNCTION ingestd_send(p_queue text, p_body text, p_priority integer, p_via_outbox boolean,
                             p_tenant uuid DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql AS $fn$
BEGIN
  IF p_via_outbox THEN
    INSERT INTO event_outbox (destination, body, priority, tenant_id)
    VALUES (p_queue, p_body, p_priority, p_tenant);
  ELSE
    INSERT INTO queue_message (id, queue_name, body, priority, tenant_id)
    VALUES (gen_random_uuid(), p_queue, p_body, COALESCE(p_priority, 50), p_tenant);
  END IF;
  RETURN 1;
END;
$fn$;

-- Adds a work item and sends its message (migration 015), now with the item's tenant.
CREATE OR REPLACE FUNCTION ingestd_add_work(p_id uuid, p_stage text, p_document uuid, p_tenant uuid,
                                            p_priority integer, p_size_class text, p_queue text,
                                            p_via_outbox boolean, p_reopen boolean)
RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
  v_added boolean;
BEGIN
  INSERT INTO work_item (id, stage, document_id, tenant_id, priority, size_class)
  VALUES (p_id, p_stage, p_document, p_tenant, COALESCE(p_priority, 50), COALESCE(p_size_class, 'small'))
  ON CONFLICT (id) DO NOTHING;
  v_added := FOUND;
  IF NOT v_added THEN
    IF NOT p_reopen THEN
      RETURN false;
    END IF;
    UPDATE work_item
       SET status = 'in-progress', attempt_count = 0, crash_count = 0, claim_token = NULL,
           claimed_by = NULL, lease_expires_at = NULL, started_at = NULL, last_error = NULL,
           error_class = NULL, cancel_requested_at = NULL, completed_at = NULL,
           priority = COALESCE(p_priority, priority), due_at = now(), message_seen_at = now()
     WHERE id = p_id;
  END IF;
  PERFORM ingestd_send(p_queue, p_id::text, p_priority, p_via_outbox, p_tenant);
  RETURN true;
END;
$fn$;
