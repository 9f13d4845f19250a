-- 0016_delivered_in_columns, reversed: each job delivered since puts its delivering attempt back
-- at the end of its attempt log, as the result write appended it before (the newest 20 kept),
-- and the two columns go. One UPDATE of every such row, under the migration's lock.
UPDATE bulkhead.jobs AS j
   SET attempts = CASE WHEN jsonb_array_length(j.attempts) >= 20 THEN j.attempts - 0
                       ELSE j.attempts END
                  || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                       'attempt', j.attempt, 'at', j.attempted_at, 'node', j.attempted_by,
                       'duration_ms', round(j.delivered_ms::numeric, 1),
                       'status', j.delivered_status)))
 WHERE j.delivered_status IS NOT NULL OR j.delivered_ms IS NOT NULL;
ALTER TABLE bulkhead.jobs DROP COLUMN delivered_status, DROP COLUMN delivered_ms;
