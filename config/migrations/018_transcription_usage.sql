-- What a transcription cost, for `ingestd usage`: the pages the provider read and which provider
-- read them ("tesseract", "document_ai", or the native text of a PDF), recorded with the
-- transcription. Rows from before stay NULL and count no pages.
ALTER TABLE ingestion
  ADD COLUMN transcribed_pages integer CHECK (transcribed_pages >= 0),
  ADD COLUMN transcribed_by text;
