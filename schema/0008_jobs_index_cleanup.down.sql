-- 0008_jobs_index_cleanup, reversed: a vacuum of the jobs table decides again whether to clean
-- its indexes (PostgreSQL's default, auto).
ALTER TABLE bulkhead.jobs RESET (vacuum_index_cleanup);
