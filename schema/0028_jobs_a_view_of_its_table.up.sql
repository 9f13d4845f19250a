-- 0028_jobs_a_view_of_its_table: bulkhead.jobs becomes a view of the table that holds the
-- jobs, bulkhead.job_rows (issue 30; ADR 0029, step 1 of "Building it, each step green").
--
-- ADR 0029's intake keeps an application's fresh deliveries in a table of their own until a
-- claim moves them into the jobs table. Readers of bulkhead.jobs (operators' queries, the
-- outside checks, the console) must still see them, as available jobs: only a view can show
-- two tables as one. This step makes the view and changes nothing a reader sees: the view is
-- every column of the table, and a view of one table is automatically updatable, so INSERT,
-- UPDATE, DELETE, RETURNING and FOR UPDATE through it act on the table.
--
-- What cannot go through a view names the table: partitions, ctid and xmax, regclass and
-- pg_inherits lookups, pg_get_serial_sequence, TRUNCATE, VACUUM, triggers. The engine's own
-- statements (worker/store) name the table throughout, and so do the schema's functions
-- (below): the view is for those who read.
--
-- The table keeps what it had: its ranges, indexes, triggers, CHECK, sequence (jobs_id_seq),
-- statistics and storage settings; the views and triggers that depend on it follow the rename,
-- since PostgreSQL binds them to the table, not its name. A statement prepared on the old
-- name is planned again on the view: a node older than this migration cannot claim once it
-- has run (its claim reads ctid), so upgrade the nodes with the migration, as for any
-- migration the engine's statements depend on.
ALTER TABLE bulkhead.jobs RENAME TO job_rows;
CREATE VIEW bulkhead.jobs AS SELECT * FROM bulkhead.job_rows;
COMMENT ON VIEW bulkhead.jobs IS
  'Every job, one row each (docs/schema.md): a view of bulkhead.job_rows, where they are kept.';

-- A view reads its table with its owner's rights: whoever was granted the table is granted the
-- view the same way.
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT a.privilege_type, a.grantee
             FROM pg_class c, aclexplode(c.relacl) a
            WHERE c.oid = 'bulkhead.job_rows'::regclass AND a.grantee <> c.relowner LOOP
    EXECUTE format('GRANT %s ON bulkhead.jobs TO %s', g.privilege_type,
                   CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE g.grantee::regrole::text END);
  END LOOP;
END
$$;

-- Every function of the schema that names bulkhead.jobs names the table instead: one rule
-- applied to each function's definition as it stands, rather than every body copied out of
-- its migration again. Nothing else in a body changes. The grant function, which grants a
-- part its rights on jobs, grants them on both the table and the view. Down applies the
-- reverse rule, which gives back each definition exactly: no function named
-- bulkhead.job_rows before.
DO $$
DECLARE
  f oid;
  definition text;
BEGIN
  FOR f IN SELECT p.oid FROM pg_proc p
            WHERE p.pronamespace = 'bulkhead'::regnamespace
              AND p.prosrc ~ 'bulkhead\.jobs(?![_a-z0-9])' LOOP
    definition := regexp_replace(pg_get_functiondef(f), 'bulkhead\.jobs(?![_a-z0-9])',
                                 'bulkhead.job_rows', 'g');
    definition := replace(definition, ' ON bulkhead.job_rows TO ',
                          ' ON bulkhead.job_rows, bulkhead.jobs TO ');
    EXECUTE definition;
  END LOOP;
END
$$;
