-- 0005_checks_on_write, reversed: the columns back to jsonb (no rewrite) and the CHECKs back on
-- the row. Adding them validates every row, reading every payload once, under the lock.
ALTER TABLE bulkhead.jobs
  ALTER COLUMN payload TYPE jsonb,
  ALTER COLUMN attempts TYPE jsonb,
  ALTER COLUMN attempts SET DEFAULT '[]',
  ADD CONSTRAINT jobs_payload_is_object_or_array
    CHECK (jsonb_typeof(payload) IN ('object', 'array')),
  ADD CONSTRAINT jobs_attempts_is_array CHECK (jsonb_typeof(attempts) = 'array');
DROP DOMAIN bulkhead.attempt_log;
DROP DOMAIN bulkhead.job_payload;
