-- 0028_jobs_a_view_of_its_table, reversed: bulkhead.jobs is the table again, and the schema's
-- functions name it as they did before 0028 (the reverse of its rule). The view's grants go
-- with it; the table's were never changed.
DROP VIEW bulkhead.jobs;
ALTER TABLE bulkhead.job_rows RENAME TO jobs;

DO $$
DECLARE
  f oid;
  definition text;
BEGIN
  FOR f IN SELECT p.oid FROM pg_proc p
            WHERE p.pronamespace = 'bulkhead'::regnamespace
              AND p.prosrc ~ 'bulkhead\.job_rows(?![_a-z0-9])' LOOP
    definition := replace(pg_get_functiondef(f), ' ON bulkhead.job_rows, bulkhead.jobs TO ',
                          ' ON bulkhead.job_rows TO ');
    definition := regexp_replace(definition, 'bulkhead\.job_rows(?![_a-z0-9])',
                                 'bulkhead.jobs', 'g');
    EXECUTE definition;
  END LOOP;
END
$$;
