-- 0003_fleet: what node leases, rescue and pruning need from the jobs table.
--
-- Autovacuum for a queue table. Jobs churn: every delivery inserts a row, updates it at least
-- twice (claim, result) and, after the retention, deletes it — and since `state` is in the
-- predicates of the partial indexes, no update is HOT. With the default scale factor (20 % of
-- the table) a ten-million-row table would wait for two million dead rows before a vacuum,
-- while the claim's index scans step over every dead index entry until then. 1 % with a floor
-- of 1,000 rows vacuums early and often; the higher cost limit lets each run finish quickly
-- instead of being throttled behind the churn that made it necessary. ANALYZE follows at 2 %,
-- so the planner sees the available/parked split as it moves.
ALTER TABLE bulkhead.jobs SET (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_insert_scale_factor = 0.05,
  autovacuum_analyze_scale_factor = 0.02,
  autovacuum_vacuum_cost_limit = 2000
);

-- Finished jobs in the order they may be pruned: the leader deletes those finished before the
-- retention in bounded batches, walking this index from the oldest.
CREATE INDEX jobs_finished ON bulkhead.jobs (finished_at, id)
  WHERE state IN ('completed', 'discarded', 'cancelled');
