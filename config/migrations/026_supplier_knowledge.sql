-- Learning from corrections (review.learn): what a tenant's reviewers taught about a supplier,
-- written with the approval that taught it. The supplier is the machine's reading of it
-- ("vat:DE123456789" or "name:acmegmbh"); field is supplier_name, supplier_vat_id or date_order;
-- reviews counts the approvals that taught the same value (another value starts over at 1).
-- Reviewers see and delete the facts on the desk.
CREATE TABLE IF NOT EXISTS supplier_knowledge (
  tenant_id  uuid NOT NULL,
  supplier   text NOT NULL,
  field      text NOT NULL,
  value      text NOT NULL,
  reviews    integer NOT NULL DEFAULT 1,
  learned_by text NOT NULL,
  learned_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, supplier, field)
);
