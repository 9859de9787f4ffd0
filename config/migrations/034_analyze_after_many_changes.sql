-- The claimed work, the ingestions, the audit trail and the event outbox are analyzed after
-- 50,000 changes at least (the trail and the outbox, which are only ever read by key, after
-- 500,000), and after a tenth of the table as before once it is larger. PostgreSQL's default of 50
-- rows plus a tenth had autovacuum analyze each of them at every round of its launcher (each second
-- on the local stack, which looks that often for the queue table's sake) until a table held
-- millions of rows: sampling tables whose statistics had not moved (441-487 us of database CPU per
-- document in bench/orchestration on the local stack, 400-410 us without). The statements that
-- write these tables find their rows by key; the few that read them otherwise (the sweeper, status
-- counts, retention) use partial indexes whose choice does not hang on statistics 50,000 changes
-- old. Vacuum is unchanged.
--
-- The document table keeps the default: matching's candidate queries are planned from its
-- statistics, and a document's features are filled in after it is written, so the statistics must
-- follow them.
ALTER TABLE ingestion SET (autovacuum_analyze_threshold = 50000);
ALTER TABLE work_item SET (autovacuum_analyze_threshold = 50000);
ALTER TABLE ingestion_event SET (autovacuum_analyze_threshold = 500000);
ALTER TABLE event_outbox SET (autovacuum_analyze_threshold = 500000);
