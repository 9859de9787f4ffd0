-- The order in which documents' features were stored, drawn under the tenant's matching lock
-- (the same advisory lock as the write phase), so that it is the order of their commits. Of two
-- documents matched at the same time, the one whose features came later has seen the other's in
-- its candidate retrieval: its decision about the pair stands, and the earlier one's write phase,
-- which may not have seen it, keeps that edge instead of deleting it.
CREATE SEQUENCE document_features_seq;
ALTER TABLE document ADD COLUMN features_seq bigint;
