-- 0005_checks_on_write: the two rules that read a job's JSON — its payload is an object or an
-- array, its attempt log is an array — move from CHECKs on the row to CHECKs on the columns'
-- types, so that they run when a payload or an attempt log is written, not on every update.
--
-- Why. PostgreSQL evaluates every CHECK constraint of a table on every UPDATE of a row, whatever
-- columns the UPDATE sets. jobs_payload_is_object_or_array and jobs_attempts_is_array call
-- jsonb_typeof(), which reads the whole value; a payload of more than about 2 KB is stored
-- compressed or out of line (TOAST). So every update of a job — the claim, the result, a
-- demotion, and above all parking and unparking a channel's whole backlog in one statement —
-- fetched and decompressed the payload of every row it touched to check a value it did not
-- change. Parking 100,000 jobs with 4 KB payloads spent half its time there (load/park_bench.sh,
-- docs/adr/0010-checks-on-write.md). A domain's CHECK runs where a value becomes the domain's: an
-- INSERT, or an UPDATE that sets the column. The rules, their names and their SQLSTATE (23514)
-- stay; a violation's message names the domain instead of the table.
--
-- How, without a rewrite or a scan under this migration's lock: the columns change to domains
-- that have no constraint yet, over their own type (PostgreSQL then rewrites nothing), and the
-- domains' CHECKs are added NOT VALID — every row already passed the table's CHECKs, dropped in
-- the same transaction, and validating would read every payload of the table again while
-- enqueues wait for the lock. Every value written from now on is checked.

-- A delivery's body: a JSON object or array (docs/schema.md).
CREATE DOMAIN bulkhead.job_payload AS jsonb;
-- A job's attempt log: an array of the newest attempts' outcomes.
CREATE DOMAIN bulkhead.attempt_log AS jsonb;

ALTER TABLE bulkhead.jobs
  DROP CONSTRAINT jobs_payload_is_object_or_array,
  DROP CONSTRAINT jobs_attempts_is_array,
  ALTER COLUMN payload TYPE bulkhead.job_payload,
  ALTER COLUMN attempts TYPE bulkhead.attempt_log,
  ALTER COLUMN attempts SET DEFAULT '[]';

ALTER DOMAIN bulkhead.job_payload ADD CONSTRAINT jobs_payload_is_object_or_array
  CHECK (jsonb_typeof(VALUE) IN ('object', 'array')) NOT VALID;
ALTER DOMAIN bulkhead.attempt_log ADD CONSTRAINT jobs_attempts_is_array
  CHECK (jsonb_typeof(VALUE) = 'array') NOT VALID;

COMMENT ON DOMAIN bulkhead.job_payload IS
  'A delivery''s body: a JSON object or array. Checked when written, not on every update of its '
  'job (migration 0005).';
COMMENT ON DOMAIN bulkhead.attempt_log IS
  'A job''s attempt log: a JSON array. Checked when written, not on every update of its job '
  '(migration 0005).';
