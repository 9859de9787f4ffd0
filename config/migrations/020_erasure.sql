-- Erasure receipts (`ingestd erase`): what was removed, when and by whom, without anything of
-- what was removed. A receipt names the erased document or tenant by its id (a random UUID) and
-- counts the rows and objects; the document's content, its file name, its hash and its data are
-- gone with it. Known-file hashes (table known_file) are not the tenant's and stay.
CREATE TABLE erasure_receipt (
  id          uuid PRIMARY KEY,
  -- 'document': one document with its container children; 'tenant': every document of a tenant,
  -- its name and its credentials.
  scope       text NOT NULL CHECK (scope IN ('document', 'tenant')),
  subject_id  uuid NOT NULL,
  tenant_id   uuid NOT NULL,
  erased_by   text NOT NULL CHECK (erased_by <> '' AND length(erased_by) <= 200),
  erased_at   timestamptz NOT NULL DEFAULT now(),
  documents   integer NOT NULL CHECK (documents >= 0),
  -- {"table": rows deleted, ...}
  rows        jsonb NOT NULL,
  objects     integer NOT NULL CHECK (objects >= 0)
);
CREATE INDEX erasure_receipt_tenant_idx ON erasure_receipt (tenant_id, erased_at);
