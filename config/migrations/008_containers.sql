-- Containers become child documents: a ZIP, TAR or e-mail is unpacked by the unpack
-- stage into child documents, each with its own ingestion. Additive: older nodes keep running.

-- The container a document was unpacked from, and its name there (the member's path in the
-- archive, or the attachment's file name). A document found again in another container keeps
-- its first parent (documents are unique per tenant and content).
ALTER TABLE document ADD COLUMN parent_id uuid REFERENCES document (id);
ALTER TABLE document ADD COLUMN member_name text;
-- How deep in nested containers it lies (0: submitted by itself).
ALTER TABLE document ADD COLUMN container_depth integer NOT NULL DEFAULT 0;
ALTER TABLE document ADD CONSTRAINT document_container_depth_check CHECK (container_depth >= 0);
-- An e-mail's body as text (the parent of its attachments).
ALTER TABLE document ADD COLUMN body_text text;
-- What went wrong while unpacking a container whose readable members were kept (a corrupt
-- archive, an attachment that could not be decoded); NULL when nothing did.
ALTER TABLE document ADD COLUMN unpack_error text;

-- GET /v1/documents/{id}: a container's children.
CREATE INDEX document_parent_idx ON document (parent_id) WHERE parent_id IS NOT NULL;

-- Which stage processes the ingestion: `ingest` (transcription and extraction) or `unpack` (a
-- container taken apart into child documents). The sweeper re-enqueues each on its own queue.
ALTER TABLE ingestion ADD COLUMN stage text NOT NULL DEFAULT 'ingest';
ALTER TABLE ingestion ADD CONSTRAINT ingestion_stage_check CHECK (stage IN ('ingest', 'unpack'));
