-- Reverses 0025_job_rules_in_one_check: the nine CHECKs of migrations 0001 and 0013 again, and
-- the function dropped. They are validated, a read of every range under this migration's lock:
-- a NOT VALID CHECK on a range conflicts with the same CHECK, valid, on the table that 0021's
-- down and up move the ranges into and out of.
ALTER TABLE bulkhead.jobs
  ADD CONSTRAINT jobs_state_known CHECK (state IN
    ('available', 'executing', 'parked', 'completed', 'discarded', 'cancelled')),
  ADD CONSTRAINT jobs_priority_in_range CHECK (priority BETWEEN 1 AND 3),
  ADD CONSTRAINT jobs_max_attempts_in_range CHECK (max_attempts BETWEEN 1 AND 100),
  ADD CONSTRAINT jobs_attempt_within_max CHECK (attempt BETWEEN 0 AND max_attempts),
  ADD CONSTRAINT jobs_finished_has_finished_at
    CHECK ((state IN ('completed', 'discarded', 'cancelled')) = (finished_at IS NOT NULL)),
  ADD CONSTRAINT jobs_executing_has_owner
    CHECK (state <> 'executing'
           OR (attempted_by IS NOT NULL AND attempted_at IS NOT NULL AND attempt >= 1)),
  ADD CONSTRAINT jobs_discarded_has_error
    CHECK (state <> 'discarded' OR last_error IS NOT NULL),
  ADD CONSTRAINT jobs_idempotency_key_length
    CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 255),
  ADD CONSTRAINT jobs_ordering_key_length
    CHECK (ordering_key IS NULL OR length(ordering_key) BETWEEN 1 AND 255),
  DROP CONSTRAINT jobs_row_valid;
DROP FUNCTION bulkhead.job_row_valid(text, smallint, smallint, smallint, timestamptz, text, text,
                                     timestamptz, text, text);
