-- 0022_new_ranges_in_place: every range the leader adds from now on keeps a delivery's row
-- versions small in the WAL (ADR 0026, issue 30 goal 3). Ranges that exist stay as they are and
-- age out with the retention; nothing is moved or rewritten.
--
-- Two changes to a new range, both physical only: bulkhead.jobs, its columns, their order as a
-- query sees them, its indexes and its constraints are those of migration 0021.
--
--   1. Its columns are stored with the payload and the attempt log last. When an updated row's
--      new version stays on its page, PostgreSQL logs only the bytes between the prefix and the
--      suffix the two versions share. The claim changes state, priority, attempt, attempted_at
--      and attempted_by; the result state, finished_at, last_error and the delivered columns
--      (a failed attempt also the attempt log). With the payload in the middle (column 10 of
--      20) every version logged it again; at the end, neither the claim's nor a delivered
--      result's version does. A range's own column order is free: a partition must have the
--      parent's columns, by name and type, in any order, and PostgreSQL maps rows between them.
--   2. Its fillfactor is 50 where the range below it has a larger one (90 since migration
--      0007), so that the claim's and the result's versions find room on the row's page. With
--      90 most of them moved to another page, which costs a lock record and the whole row.
--      A range below already stored in this order passes its options on unchanged, so an
--      operator's own fillfactor on the newest range carries forward.
--
-- What the two cost and save, measured on the engine (load/wal_life.sh, docs/operations.md):
-- see ADR 0026, "The new ranges as built".
CREATE OR REPLACE FUNCTION bulkhead.add_job_range(low bigint, high bigint) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET lock_timeout = '1s' AS $$
DECLARE
  name constant text := 'jobs_from_' || low;
  below regclass;
  options text[];
  columns text;
  checks text;
BEGIN
  IF low IS NULL OR high IS NULL OR high <= low OR low < 1 THEN
    RAISE EXCEPTION 'a range of jobs needs 1 <= low < high, got low % and high %', low, high
      USING ERRCODE = '22023';
  END IF;
  SELECT c.oid, c.reloptions INTO below, options
    FROM bulkhead.job_ranges() r JOIN pg_class c ON c.relname = r.range_name
   WHERE c.relnamespace = 'bulkhead'::regnamespace AND NOT r.is_default
     AND coalesce(r.high, 0) <= add_job_range.low
   ORDER BY r.high DESC NULLS LAST
   LIMIT 1;
  -- A range below in the old order (or none): its options with the fillfactor at most 50.
  IF below IS NULL OR (SELECT a.attname FROM pg_attribute a
                        WHERE a.attrelid = below AND a.attnum > 0 AND NOT a.attisdropped
                        ORDER BY a.attnum DESC LIMIT 1) <> 'attempts' THEN
    options := array_append(
      array(SELECT o FROM unnest(options) o WHERE o NOT LIKE 'fillfactor=%'),
      'fillfactor=' || least(50, coalesce((SELECT substr(o, 12)::int FROM unnest(options) o
                                            WHERE o LIKE 'fillfactor=%'), 100)));
  END IF;
  -- The parent's columns with their types, NOT NULL and defaults, the payload and the attempt
  -- log last; then its CHECK constraints, which an attached range must have.
  SELECT string_agg(format('%I %s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                           CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END,
                           CASE WHEN d.adbin IS NOT NULL
                                THEN ' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid) ELSE '' END),
                    ', ' ORDER BY a.attname IN ('payload', 'attempts'), a.attname = 'attempts',
                                  a.attnum)
    INTO columns
    FROM pg_attribute a
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE a.attrelid = 'bulkhead.jobs'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
  SELECT string_agg(format(', CONSTRAINT %I %s', c.conname, pg_get_constraintdef(c.oid)),
                    '' ORDER BY c.conname)
    INTO checks
    FROM pg_constraint c
   WHERE c.conrelid = 'bulkhead.jobs'::regclass AND c.contype = 'c';
  EXECUTE format('CREATE TABLE bulkhead.%I (%s%s)%s', name, columns, coalesce(checks, ''),
                 CASE WHEN cardinality(options) > 0
                      THEN ' WITH (' || array_to_string(options, ', ') || ')' ELSE '' END);
  EXECUTE format('ALTER TABLE bulkhead.jobs ATTACH PARTITION bulkhead.%I '
                 'FOR VALUES FROM (%s) TO (%s)', name, low, high);
  RETURN name;
END
$$;
COMMENT ON FUNCTION bulkhead.add_job_range(bigint, bigint) IS
  'Adds the range [low, high) of ids to bulkhead.jobs (the leader''s, migration 0021), its '
  'payload and attempt log stored last and its fillfactor at most 50 (migration 0022).';
