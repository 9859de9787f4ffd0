-- Tenants by name, and the credentials with which the HTTP intake acts for a tenant
-- (`ingestd tenants add|list|rotate-token`). A token is kept only as its SHA-256 digest: the
-- tokens are random, so the digest cannot be turned back into one. Documents keep their tenant_id
-- without a reference here: tenants that predate this table (the default tenant, tenants named
-- by INGESTD_INTAKE_TOKEN pairs) need no row.
CREATE TABLE tenant (
  id uuid PRIMARY KEY,
  name text NOT NULL UNIQUE CHECK (name <> '' AND length(name) <= 200),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tenant_credential (
  token_sha256 text PRIMARY KEY CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  tenant_id uuid NOT NULL REFERENCES tenant (id),
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Set when the token is rotated out: from then on it opens nothing.
  revoked_at timestamptz
);
CREATE INDEX tenant_credential_active_idx ON tenant_credential (tenant_id)
  WHERE revoked_at IS NULL;
