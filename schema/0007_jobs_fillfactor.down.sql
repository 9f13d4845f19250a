-- 0007_jobs_fillfactor, reversed: the jobs table fills its pages to PostgreSQL's default, 100 %.
ALTER TABLE bulkhead.jobs RESET (fillfactor);
