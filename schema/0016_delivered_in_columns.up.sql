-- 0016_delivered_in_columns: the attempt that delivers a job is kept in two columns of the row,
-- jobs.delivered_status and jobs.delivered_ms, not as an entry appended to the attempt log
-- (issue 30, goal 3; ADR 0026). The attempt log keeps the attempts that did not deliver.
--
-- Why. The result write is an UPDATE that PostgreSQL can never make HOT (state is in every
-- partial index's predicate), so its WAL record holds the new version of the row, and the
-- version kept for the week of retention is that row. The entry it appended (attempt, time,
-- node, duration, status: about 110 bytes of jsonb) repeated three columns the row already has
-- (attempt, attempted_at, attempted_by). Modelled with load/wal_layouts.sh (today's layout,
-- 20,000 deliveries, durability on): the result write 626 → 473 WAL bytes a delivery, and the
-- prune a week later 472 → 327, since smaller rows share each page's full-page image among more
-- of them; the whole life 2,305 → 2,011 bytes.
--
-- Readers. A delivered job's attempts are its log followed by one entry built from attempt,
-- attempted_at, attempted_by and these two columns; the console's delivery view builds it so
-- (worker/store/console_store.sql, Delivery). Rows delivered before this migration have the
-- entry in their log and NULL here. Adding two nullable columns without a default rewrites
-- nothing.
ALTER TABLE bulkhead.jobs
  ADD COLUMN delivered_status smallint,
  ADD COLUMN delivered_ms real;

COMMENT ON COLUMN bulkhead.jobs.delivered_status IS
  'The HTTP status of the attempt that delivered the job (completed only; migration 0016).';
COMMENT ON COLUMN bulkhead.jobs.delivered_ms IS
  'How long the delivering attempt took, in ms (completed only; migration 0016).';
