-- Monthly budgets per tenant (usage.monthly_budget, usage.tenant_budgets).
--
-- tenant_usage: each tenant's use of the paid providers (the LLM tokens of its extractions and
-- the pages Document AI read), by month (UTC, by when the ingestion was made, as `ingestd usage`
-- counts it), so that a node reads a tenant's month from one index range. A trigger appends what
-- an ingestion records; the table is append-only, so concurrent completions of one tenant never
-- wait on each other or deadlock. Reading with the local providers records no tokens and no
-- Document AI pages: the trigger's condition is false and nothing is written. The rows are
-- counts and stay through erasure.
CREATE TABLE tenant_usage (
  tenant_id          uuid NOT NULL,
  month              text NOT NULL CHECK (month ~ '^[0-9]{4}-[0-9]{2}$'),
  llm_input_tokens   bigint NOT NULL DEFAULT 0,
  llm_output_tokens  bigint NOT NULL DEFAULT 0,
  document_ai_pages  bigint NOT NULL DEFAULT 0,
  recorded_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tenant_usage_month_idx ON tenant_usage (tenant_id, month);

INSERT INTO tenant_usage (tenant_id, month, llm_input_tokens, llm_output_tokens, document_ai_pages)
SELECT d.tenant_id, to_char(i.created_at AT TIME ZONE 'UTC', 'YYYY-MM'),
       COALESCE(sum(i.extraction_input_tokens), 0), COALESCE(sum(i.extraction_output_tokens), 0),
       COALESCE(sum(i.transcribed_pages) FILTER (WHERE i.transcribed_by = 'document_ai'), 0)
  FROM ingestion AS i
  JOIN document AS d ON d.id = i.document_id
 WHERE COALESCE(i.extraction_input_tokens, 0) > 0 OR COALESCE(i.extraction_output_tokens, 0) > 0
    OR (i.transcribed_by = 'document_ai' AND COALESCE(i.transcribed_pages, 0) > 0)
 GROUP BY 1, 2;

CREATE FUNCTION ingestd_document_ai_pages(p_by text, p_pages integer) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN p_by = 'document_ai' THEN COALESCE(p_pages, 0) ELSE 0 END::bigint
$fn$;

CREATE FUNCTION ingestd_count_usage() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO tenant_usage (tenant_id, month, llm_input_tokens, llm_output_tokens,
                            document_ai_pages)
  SELECT d.tenant_id, to_char(NEW.created_at AT TIME ZONE 'UTC', 'YYYY-MM'),
         COALESCE(NEW.extraction_input_tokens, 0) - COALESCE(OLD.extraction_input_tokens, 0),
         COALESCE(NEW.extraction_output_tokens, 0) - COALESCE(OLD.extraction_output_tokens, 0),
         ingestd_document_ai_pages(NEW.transcribed_by, NEW.transcribed_pages)
           - ingestd_document_ai_pages(OLD.transcribed_by, OLD.transcribed_pages)
    FROM document AS d
   WHERE d.id = NEW.document_id;
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER ingestion_counts_usage
  AFTER UPDATE OF extraction_input_tokens, extraction_output_tokens, transcribed_pages,
                  transcribed_by ON ingestion
  FOR EACH ROW
  WHEN (COALESCE(NEW.extraction_input_tokens, 0) <> COALESCE(OLD.extraction_input_tokens, 0)
        OR COALESCE(NEW.extraction_output_tokens, 0) <> COALESCE(OLD.extraction_output_tokens, 0)
        OR ingestd_document_ai_pages(NEW.transcribed_by, NEW.transcribed_pages)
           <> ingestd_document_ai_pages(OLD.transcribed_by, OLD.transcribed_pages))
  EXECUTE FUNCTION ingestd_count_usage();

-- The first node in a month to find a tenant's cost at its budget writes a row here and one
-- BUDGET_EXCEEDED event in the same statement; the other nodes find the row and write nothing.
CREATE TABLE budget_exceeded (
  tenant_id   uuid NOT NULL,
  month       text NOT NULL CHECK (month ~ '^[0-9]{4}-[0-9]{2}$'),
  spent       double precision NOT NULL,
  budget      double precision NOT NULL,
  currency    text NOT NULL,
  action      text NOT NULL CHECK (action IN ('downgrade', 'hold')),
  noticed_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, month)
);
