-- Reverses 0022_new_ranges_in_place: add_job_range creates new ranges as migration 0021 did
-- (the columns in the parent's order, the options of the range below as they are). Ranges
-- already added in the new order stay: they are ranges like any other (a down of 0021 reads
-- their rows through the parent, in its order).
CREATE OR REPLACE FUNCTION bulkhead.add_job_range(low bigint, high bigint) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET lock_timeout = '1s' AS $$
DECLARE
  name constant text := 'jobs_from_' || low;
  options text;
BEGIN
  IF low IS NULL OR high IS NULL OR high <= low OR low < 1 THEN
    RAISE EXCEPTION 'a range of jobs needs 1 <= low < high, got low % and high %', low, high
      USING ERRCODE = '22023';
  END IF;
  SELECT array_to_string(c.reloptions, ', ') INTO options
    FROM bulkhead.job_ranges() r JOIN pg_class c ON c.relname = r.range_name
   WHERE c.relnamespace = 'bulkhead'::regnamespace AND NOT r.is_default
     AND coalesce(r.high, 0) <= add_job_range.low
   ORDER BY r.high DESC NULLS LAST
   LIMIT 1;
  EXECUTE format('CREATE TABLE bulkhead.%I (LIKE bulkhead.jobs INCLUDING DEFAULTS '
                 'INCLUDING CONSTRAINTS INCLUDING STORAGE)%s', name,
                 CASE WHEN options IS NULL THEN '' ELSE ' WITH (' || options || ')' END);
  EXECUTE format('ALTER TABLE bulkhead.jobs ATTACH PARTITION bulkhead.%I '
                 'FOR VALUES FROM (%s) TO (%s)', name, low, high);
  RETURN name;
END
$$;
COMMENT ON FUNCTION bulkhead.add_job_range(bigint, bigint) IS
  'Adds the range [low, high) of ids to bulkhead.jobs (the leader''s, migration 0021).';
