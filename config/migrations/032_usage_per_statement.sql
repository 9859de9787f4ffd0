-- A tenant's usage (migration 021) appended once per statement and tenant-month, instead of one
-- row per ingestion by a row trigger: a results statement of 100 LLM extractions of one tenant
-- wrote 100 rows (each looking up its document), now one. What is counted is unchanged: for
-- every updated ingestion, its LLM tokens and Document AI pages as they are less as they were.
-- The sum needs no join of the old rows with the new (their transition tables are summed apart,
-- so no plan made for one firing's size can be wrong for another's), and only the ingestions
-- whose usage changed look up their document's tenant, each by its key. The transition tables
-- are the same ones the outcome trigger (migrations 028, 030) reads.
DROP TRIGGER ingestion_counts_usage ON ingestion;
DROP FUNCTION ingestd_count_usage();

CREATE FUNCTION ingestd_count_usage() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO tenant_usage (tenant_id, month, llm_input_tokens, llm_output_tokens,
                            document_ai_pages)
  SELECT t.tenant_id, t.month, sum(t.input_tokens), sum(t.output_tokens), sum(t.pages)
    FROM (SELECT (SELECT d.tenant_id FROM document AS d WHERE d.id = u.document_id) AS tenant_id,
                 u.month, u.input_tokens, u.output_tokens, u.pages
            FROM (SELECT r.document_id, to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM') AS month,
                         sum(r.input_tokens) AS input_tokens, sum(r.output_tokens) AS output_tokens,
                         sum(r.pages) AS pages
                    FROM (SELECT n.document_id, n.created_at,
                                 COALESCE(n.extraction_input_tokens, 0) AS input_tokens,
                                 COALESCE(n.extraction_output_tokens, 0) AS output_tokens,
                                 ingestd_document_ai_pages(n.transcribed_by, n.transcribed_pages)
                                   AS pages
                            FROM changed_ingestions AS n
                          UNION ALL
                          SELECT o.document_id, o.created_at,
                                 -COALESCE(o.extraction_input_tokens, 0),
                                 -COALESCE(o.extraction_output_tokens, 0),
                                 -ingestd_document_ai_pages(o.transcribed_by, o.transcribed_pages)
                            FROM replaced_ingestions AS o) AS r
                   WHERE r.input_tokens <> 0 OR r.output_tokens <> 0 OR r.pages <> 0
                   GROUP BY 1, 2
                  HAVING sum(r.input_tokens) <> 0 OR sum(r.output_tokens) <> 0
                      OR sum(r.pages) <> 0) AS u) AS t
   WHERE t.tenant_id IS NOT NULL
   GROUP BY t.tenant_id, t.month
   ORDER BY t.tenant_id, t.month;
  RETURN NULL;
END;
$fn$;

CREATE TRIGGER ingestion_counts_usage AFTER UPDATE ON ingestion
  REFERENCING OLD TABLE AS replaced_ingestions NEW TABLE AS changed_ingestions
  FOR EACH STATEMENT EXECUTE FUNCTION ingestd_count_usage();
