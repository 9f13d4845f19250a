-- 0027_wake_gate: an enqueue pays for the wake-up trigger only while a runner may be asleep
-- (issue 30, goal 1; docs/adr/0030-a-gate-on-the-wake-up-trigger.md).
--
-- Why. Since 0010 every due job an enqueue inserts queues a deferred trigger event, and every
-- enqueuing commit runs bulkhead.wake_sleepers (a plpgsql call, a flag, a look at
-- bulkhead.sleepers) even when no runner sleeps, which is the whole time the fleet is busy.
-- Measured on 2026-12-07 (a loop of committed enqueues in the server, 100 channels), that
-- trigger was about a fifth of an enqueue's time, and 16 or 32 clients committed 10 to 20 %
-- more enqueues a second with it disabled (ADR 0030).
--
-- Now the trigger's WHEN asks, without a query, whether a runner may be asleep: two unlogged
-- sequences are the gate.
--   * bulkhead.sleeps_begun: a runner that has written its mark calls bulkhead.fell_asleep(),
--     which draws from it, after its mark committed.
--   * bulkhead.sleeps_seen: the commit that leaves bulkhead.sleepers empty sets it to what it
--     read from sleeps_begun before it looked. Only a READ COMMITTED transaction sets it: one
--     with an older snapshot may not see a mark that has committed.
--   The gate is open while sleeps_begun is ahead. A mark whose draw the setting commit read
--   was visible to its look, since the mark committed before the draw; so a mark never hides
--   behind a closed gate, except after a commit that set the gate and then rolled back (its
--   taken marks return): the runner draws again at its next poll.
--
-- What the WHEN cannot see: it is evaluated when the row is inserted, not at COMMIT. A runner
-- that falls asleep after an enqueue's INSERT and before its COMMIT is not notified by it.
-- fell_asleep() therefore returns the next transaction id, read after the draw, and the
-- transactions running: every transaction whose INSERT found the gate closed before the draw
-- has an id below it (an INSERT takes its id before its AFTER triggers are queued). The runner
-- claims again when one of those ends (SleepHorizon), and stops looking when all have.
--
-- Unlogged: neither sequence writes WAL, and a crash or a failover resets both (to NULL, read
-- as 0: the gate closed), as it empties bulkhead.sleepers; the runners mark themselves again.
CREATE UNLOGGED SEQUENCE bulkhead.sleeps_begun MINVALUE 0 START 1;
CREATE UNLOGGED SEQUENCE bulkhead.sleeps_seen MINVALUE 0;
COMMENT ON SEQUENCE bulkhead.sleeps_begun IS
  'Drawn by a runner after its sleeping mark committed (bulkhead.fell_asleep). Ahead of '
  'sleeps_seen: the wake-up trigger runs (migration 0027).';
COMMENT ON SEQUENCE bulkhead.sleeps_seen IS
  'Set by the commit that leaves bulkhead.sleepers empty to the sleeps_begun it read before '
  'looking (migration 0027).';
-- The WHEN runs as whatever role inserts the job.
GRANT SELECT ON SEQUENCE bulkhead.sleeps_begun, bulkhead.sleeps_seen TO PUBLIC;

-- A runner's call after its mark committed: the draw, then what its SleepHorizon watches.
-- next_xid is read after the draw (age() reads the next id without taking one); the snapshot's
-- ids are 64-bit (xid8) as bigint, `running` sorted.
CREATE FUNCTION bulkhead.fell_asleep(OUT next_xid bigint, OUT xmin bigint, OUT xmax bigint,
                                     OUT running bigint[])
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  snap pg_snapshot;
BEGIN
  PERFORM nextval('bulkhead.sleeps_begun');
  snap := pg_current_snapshot();
  xmin := pg_snapshot_xmin(snap)::text::bigint;
  xmax := pg_snapshot_xmax(snap)::text::bigint;
  running := ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(snap) x ORDER BY 1);
  -- The 32-bit id of xmin, whose age is the distance to the next id to be assigned.
  next_xid := xmin + age((xmin % 4294967296)::text::xid);
END
$$;
COMMENT ON FUNCTION bulkhead.fell_asleep() IS
  'Opens the wake-up gate after a runner''s mark committed; returns the next transaction id '
  'and the running ones, which the runner watches (migration 0027).';
GRANT EXECUTE ON FUNCTION bulkhead.fell_asleep() TO PUBLIC;

-- The trigger's work for one queue, as the schema's owner (setval needs it): takes the queue's
-- marks and notifies (wake_sleeping, migration 0014), then closes the gate if no mark is left.
CREATE FUNCTION bulkhead.wake_queue(queue text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_variable
DECLARE
  begun constant bigint := pg_sequence_last_value('bulkhead.sleeps_begun');  -- before the look
BEGIN
  IF EXISTS (SELECT 1 FROM bulkhead.sleepers s WHERE s.queue = queue) THEN
    PERFORM bulkhead.wake_sleeping(queue);
  END IF;
  IF begun IS NOT NULL AND current_setting('transaction_isolation') = 'read committed'
     AND NOT EXISTS (SELECT 1 FROM bulkhead.sleepers) THEN
    PERFORM setval('bulkhead.sleeps_seen', begun);
  END IF;
END
$$;
COMMENT ON FUNCTION bulkhead.wake_queue(text) IS
  'Takes the sleeping marks of a queue and notifies its runners; closes the wake-up gate when '
  'no mark is left (migration 0027). Called by the enqueue trigger at COMMIT.';
GRANT EXECUTE ON FUNCTION bulkhead.wake_queue(text) TO PUBLIC;

CREATE OR REPLACE FUNCTION bulkhead.wake_sleepers() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  flag constant text := 'bulkhead.woken.' || NEW.queue;
BEGIN
  IF current_setting(flag, true) IS DISTINCT FROM 'on' THEN
    PERFORM set_config(flag, 'on', true);
    PERFORM bulkhead.wake_queue(NEW.queue);
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER jobs_wake_sleepers ON bulkhead.jobs;
CREATE CONSTRAINT TRIGGER jobs_wake_sleepers AFTER INSERT ON bulkhead.jobs
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.state = 'available' AND NEW.scheduled_at <= now()
        AND coalesce(pg_sequence_last_value('bulkhead.sleeps_begun'), 0)
            > coalesce(pg_sequence_last_value('bulkhead.sleeps_seen'), 0))
  EXECUTE FUNCTION bulkhead.wake_sleepers();
