-- Calibrated confidence (review.auto_approve): a node reads what reviewers did with a tenant's
-- extracted values, each document's first review (the machine's data, as the reviewer found
-- it), in one index range per tenant.
CREATE INDEX IF NOT EXISTS document_review_tenant_idx
    ON document_review (tenant_id, document_id, at, id);
