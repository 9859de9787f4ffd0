-- Size classes: an ingestion runs in the small or the large class, each with its own
-- queue and deadlines. Intake picks the class by size and page count; a small ingestion that
-- times out or fails twice, or whose worker crashed, moves to the large class; a large one that
-- times out or fails twice fails for review. attempt_count stays the count over both classes (the
-- poison bound on crashes holds across the move); class_attempts_base is attempt_count when the
-- ingestion entered its current class, so attempt_count - class_attempts_base are the attempts
-- made in it. Additive: older nodes ignore both columns.
ALTER TABLE ingestion ADD COLUMN size_class text NOT NULL DEFAULT 'small'
  CHECK (size_class IN ('small', 'large'));
ALTER TABLE ingestion ADD COLUMN class_attempts_base integer NOT NULL DEFAULT 0
  CHECK (class_attempts_base >= 0);
