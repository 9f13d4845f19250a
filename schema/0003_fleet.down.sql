-- 0003_fleet, reversed.
DROP INDEX bulkhead.jobs_finished;
ALTER TABLE bulkhead.jobs RESET (
  autovacuum_vacuum_scale_factor,
  autovacuum_vacuum_threshold,
  autovacuum_vacuum_insert_scale_factor,
  autovacuum_analyze_scale_factor,
  autovacuum_vacuum_cost_limit
);
