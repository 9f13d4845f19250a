-- 0025_job_rules_in_one_check: bulkhead.jobs' nine row rules in one CHECK that calls one
-- function (issue 30, goals 2 and 3).
--
-- PostgreSQL 15 keeps a CHECK constraint as the text of its expression tree (pg_constraint.
-- conbin) and reads that text back into a tree for every statement that writes the table, for
-- every CHECK of the table (ExecRelCheck prepares them once a ResultRelInfo, which each
-- execution makes anew). Jobs' nine rules are 9,760 characters of it, mostly the array of
-- state names spelt out byte by byte. An enqueue is one statement of one row, so it paid the
-- whole read for one row: 22.6 of an enqueue's 64.5 µs in the server, and a bare INSERT of
-- jobs' columns without them takes 9.1 µs (load/enqueue_cost.sh, `bare` and `row`).
--
-- The rules are the same, tested in the same order, by bulkhead.job_row_valid: its call is
-- a tree of ten column references, read in a few µs, and the function, compiled once a
-- session, runs once a row. A statement of 75 rows, the claim's and the result write's shape,
-- cost the same either way (measured in a DO loop, 2026-12-06: 10.0–11.3 µs a row for both).
--
-- A violation is still refused with SQLSTATE 23514 and a message that names the rule, as the
-- nine constraints did ('violates check constraint "jobs_state_known"'); the error's
-- constraint field names the rule too, the DETAIL says which value broke it.
--
-- The constraint is added NOT VALID: the nine CHECKs held every row until this transaction
-- drops them, so a scan of the whole table (every range, under the lock this migration holds)
-- would find nothing. Ranges the leader adds from now on have it, valid, from their creation.
CREATE FUNCTION bulkhead.job_row_valid(state text, priority smallint, max_attempts smallint,
                                       attempt smallint, finished_at timestamptz,
                                       last_error text, attempted_by text,
                                       attempted_at timestamptz, idempotency_key text,
                                       ordering_key text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  rule text;
  detail text;
BEGIN
  -- A rule is broken when its condition is false; NULL passes, as in a CHECK.
  IF NOT (state IN ('available', 'executing', 'parked', 'completed', 'discarded',
                    'cancelled')) THEN
    rule := 'jobs_state_known';
    detail := format('state is %L', state);
  ELSIF NOT (priority BETWEEN 1 AND 3) THEN
    rule := 'jobs_priority_in_range';
    detail := format('priority is %s, not 1 to 3', priority);
  ELSIF NOT (max_attempts BETWEEN 1 AND 100) THEN
    rule := 'jobs_max_attempts_in_range';
    detail := format('max_attempts is %s, not 1 to 100', max_attempts);
  ELSIF NOT (attempt BETWEEN 0 AND max_attempts) THEN
    rule := 'jobs_attempt_within_max';
    detail := format('attempt is %s, max_attempts %s', attempt, max_attempts);
  ELSIF NOT ((state IN ('completed', 'discarded', 'cancelled')) = (finished_at IS NOT NULL)) THEN
    rule := 'jobs_finished_has_finished_at';
    detail := format('state is %L, finished_at %s', state, coalesce(finished_at::text, 'NULL'));
  ELSIF NOT (state <> 'executing'
             OR (attempted_by IS NOT NULL AND attempted_at IS NOT NULL AND attempt >= 1)) THEN
    rule := 'jobs_executing_has_owner';
    detail := format('executing with attempted_by %s, attempted_at %s, attempt %s',
                     coalesce(quote_literal(attempted_by), 'NULL'),
                     coalesce(attempted_at::text, 'NULL'), attempt);
  ELSIF NOT (state <> 'discarded' OR last_error IS NOT NULL) THEN
    rule := 'jobs_discarded_has_error';
    detail := 'discarded without a last_error';
  ELSIF NOT (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 255) THEN
    rule := 'jobs_idempotency_key_length';
    detail := format('idempotency_key is %s characters, not 1 to 255', length(idempotency_key));
  ELSIF NOT (ordering_key IS NULL OR length(ordering_key) BETWEEN 1 AND 255) THEN
    rule := 'jobs_ordering_key_length';
    detail := format('ordering_key is %s characters, not 1 to 255', length(ordering_key));
  ELSE
    RETURN true;
  END IF;
  RAISE EXCEPTION 'new row for relation "jobs" violates check constraint "%"', rule
    USING ERRCODE = 'check_violation', CONSTRAINT = rule, SCHEMA = 'bulkhead',
          TABLE = 'jobs', DETAIL = detail;
END
$$;
COMMENT ON FUNCTION bulkhead.job_row_valid(text, smallint, smallint, smallint, timestamptz, text,
                                           text, timestamptz, text, text) IS
  'The row rules of bulkhead.jobs (CHECK jobs_row_valid): true, or raises 23514 naming the rule.';
-- Every role that writes jobs evaluates it; it reads nothing.
GRANT EXECUTE ON FUNCTION bulkhead.job_row_valid(text, smallint, smallint, smallint,
                                                 timestamptz, text, text, timestamptz, text,
                                                 text) TO PUBLIC;

ALTER TABLE bulkhead.jobs
  ADD CONSTRAINT jobs_row_valid
    CHECK (bulkhead.job_row_valid(state, priority, max_attempts, attempt, finished_at,
                                  last_error, attempted_by, attempted_at, idempotency_key,
                                  ordering_key)) NOT VALID,
  DROP CONSTRAINT jobs_state_known,
  DROP CONSTRAINT jobs_priority_in_range,
  DROP CONSTRAINT jobs_max_attempts_in_range,
  DROP CONSTRAINT jobs_attempt_within_max,
  DROP CONSTRAINT jobs_finished_has_finished_at,
  DROP CONSTRAINT jobs_executing_has_owner,
  DROP CONSTRAINT jobs_discarded_has_error,
  DROP CONSTRAINT jobs_idempotency_key_length,
  DROP CONSTRAINT jobs_ordering_key_length;
