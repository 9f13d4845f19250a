-- 0006_claim_index_apart: jobs_claim's predicate narrows to `state = 'available' AND priority
-- BETWEEN 1 AND 3`, so that only a statement that says so can read it (issue 34, ADR 0016).
--
-- Why. jobs_claim (queue, priority, scheduled_at, id) and jobs_channel_available (channel_id,
-- priority, scheduled_at, id) held the same rows: `state = 'available'`. A statement looking for
-- one channel's available jobs — the claim's skip scan and its spread and lend steps, a snooze,
-- a park — could be served by either, and the planner chose by the statistics of the moment.
-- With statistics taken while the table held no available row (a table of finished jobs that
-- autovacuum re-analyzes only after a tenth of it changes), both indexes look empty, and the
-- planner took jobs_claim: a scan of every available job of the queue, filtered on channel_id,
-- once per channel. Beside 1,000,000 finished jobs a 60,000-job burst drained at a tenth of its
-- empty-table rate. No setting of the claiming session could steer it back.
--
-- How. Every job's priority is 1, 2 or 3 (jobs_priority_in_range), so the narrowed predicate
-- holds the same rows. But PostgreSQL uses a partial index only for a query whose WHERE implies
-- its predicate, and `priority = 1` (a constant: the claim's windows, one per priority) implies
-- `priority BETWEEN 1 AND 3`, while `priority = g.priority` (a column of another row: the skip
-- scan, the spread) and no priority at all (a channel's backlog) do not. So the windows still
-- read jobs_claim in order, and every per-channel step can only reach jobs_channel_available,
-- whatever the statistics say. A statement that counts a queue's available jobs says
-- `priority BETWEEN 1 AND 3` to keep reading jobs_claim (SampleJobs, SampleLag, QueueStatus).
--
-- The index is built anew under this migration's lock: a build reads the whole table (about
-- 10 s for 10,000,000 rows on the 2-core development machine), during which enqueues wait.
-- Run it, like every migration, while the application can wait that long (docs/operations.md).
DROP INDEX bulkhead.jobs_claim;
CREATE INDEX jobs_claim ON bulkhead.jobs (queue, priority, scheduled_at, id)
  WHERE state = 'available' AND priority BETWEEN 1 AND 3;
