-- 0027_wake_gate: an enqueue pays for the wake-up trigger only while a runner may be asleep
-- (issue 30, goal 1; docs/adr/0030-a-gate-on-the-wake-up-trigger.md).
--
-- Why. Since 0010 every due job an enqueue inserts queues a deferred trigger event, and every
-- enqueuing commit runs bulkhead.wake_sleepers (a plpgsql call, a flag, a look at
-- bulkhead.sleepers) even when no runner sleeps, which is the whole time the fleet is busy.
-- Measured on 2026-12-07 (load/wake_gate_cost.sh: loops of committed enqueues, 100 channels,
-- the backend's CPU time), the trigger was about a fifth of an enqueue's CPU in the server
-- (ADR 0030).
--
-- Now the trigger's WHEN asks, without a query, whether a runner may be asleep: the sequence
-- bulkhead.wake_gate is the gate, 1 open, 0 or NULL closed (pg_sequence_last_value() reads its
-- page: no executor, no WAL, one lock that conflicts with no enqueue's).
--   * A runner that has written its mark opens it through bulkhead.open_wake_gate(), after the
--     mark committed.
--   * The commit that leaves bulkhead.sleepers empty closes it (bulkhead.wake_queue). Only a
--     READ COMMITTED transaction does: one with an older snapshot may not see a mark that has
--     committed.
--   Opening and closing exclude each other through an advisory lock, held by each to the end
--   of its transaction; a closer that cannot take it at once leaves the gate open, and an
--   opener waits up to 50 ms for it (a closer holds it until its commit has been flushed) and
--   then opens regardless. A closer looks at the marks after taking the lock, so it sees every
--   mark whose opener took the lock before it; an opener after it opens again. So a gate never
--   closes over a mark, except when the closing commit then rolls back (its taken marks come
--   back) or a closer stalls longer than an opener waits between its look and its setval: the
--   runner opens the gate again at its next poll.
--
-- What the WHEN cannot see: it is evaluated when the row is inserted, not at COMMIT. A runner
-- that falls asleep after an enqueue's INSERT and before its COMMIT is not notified by it.
-- bulkhead.fell_asleep(), called next, returns the next transaction id, read after the gate
-- opened, and the transactions running: every transaction whose INSERT found the gate closed before that has an
-- id below it (an INSERT takes its id before its AFTER triggers are queued). The runner
-- claims again when one of those ends (SleepHorizon), and stops looking when all have.
--
-- One sequence, not two: during the INSERT an enqueue holds 15 relation locks (channels,
-- tenants, their keys, jobs, its range, the id sequence and the range's eight indexes), and
-- PostgreSQL 15 keeps 16 per backend out of the shared lock table. A gate of two sequences,
-- a counter each for openers and closers, needed no lock between them but sent every
-- enqueue's seventeenth lock through the shared table.
--
-- Logged, though a hint: PostgreSQL 15 leaves an unlogged sequence unreadable on a promoted
-- standby ("bad magic number in sequence", found by the failover scenario), and the WHEN of
-- every enqueue reads it. Its setval writes a little WAL once a sleep and once a close. After
-- a crash or a failover it holds its last state beside an emptied bulkhead.sleepers: open, the
-- first enqueue closes it; closed, the runners, marking themselves again, open it.
CREATE SEQUENCE bulkhead.wake_gate MINVALUE 0 MAXVALUE 1 START 0;
COMMENT ON SEQUENCE bulkhead.wake_gate IS
  'The wake-up gate: 1 while a runner may be asleep, 0 or NULL after the commit that took the '
  'last sleeping mark (migration 0027). Set with setval only.';
-- The WHEN runs as whatever role inserts the job.
GRANT SELECT ON SEQUENCE bulkhead.wake_gate TO PUBLIC;

-- A runner's first call after its mark committed: opens the gate. Its own transaction, which
-- setval gives a transaction id (the sequence is logged): its commit need not wait for a flush
-- (a gate lost in a crash is opened again by the runner's next mark).
CREATE FUNCTION bulkhead.open_wake_gate() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  FOR try IN 1..50 LOOP
    EXIT WHEN pg_try_advisory_xact_lock(hashtext('bulkhead.wake_gate'), 0);
    PERFORM pg_sleep(0.001);
  END LOOP;
  PERFORM setval('bulkhead.wake_gate', 1);
  PERFORM set_config('synchronous_commit', 'off', true);
END
$$;
COMMENT ON FUNCTION bulkhead.open_wake_gate() IS
  'Opens the wake-up gate after a runner''s mark committed (migration 0027).';
GRANT EXECUTE ON FUNCTION bulkhead.open_wake_gate() TO PUBLIC;

-- Its second, in a transaction of its own after the first: what its SleepHorizon watches. A
-- transaction without an id of its own, so age() reads the next id to be assigned (with one,
-- age() would count from it, and an enqueue could have taken a later id before the gate
-- opened). The snapshot's ids are 64-bit (xid8) as bigint, `running` sorted.
CREATE FUNCTION bulkhead.fell_asleep(OUT next_xid bigint, OUT xmin bigint, OUT xmax bigint,
                                     OUT running bigint[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  snap pg_snapshot := pg_current_snapshot();
BEGIN
  xmin := pg_snapshot_xmin(snap)::text::bigint;
  xmax := pg_snapshot_xmax(snap)::text::bigint;
  running := ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(snap) x ORDER BY 1);
  -- The 32-bit id of xmin, whose age is the distance to the next id to be assigned.
  next_xid := xmin + age((xmin % 4294967296)::text::xid);
END
$$;
COMMENT ON FUNCTION bulkhead.fell_asleep() IS
  'The next transaction id and the running ones, which a runner that has opened the wake-up '
  'gate watches (migration 0027). Called in a transaction that has no id.';
GRANT EXECUTE ON FUNCTION bulkhead.fell_asleep() TO PUBLIC;

-- The trigger's work for one queue, as the schema's owner (setval needs it): takes the queue's
-- marks and notifies (wake_sleeping, migration 0014), then closes the gate if no mark is left.
-- Nested IFs, so the lock is taken before the look.
CREATE FUNCTION bulkhead.wake_queue(queue text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_variable
BEGIN
  IF EXISTS (SELECT 1 FROM bulkhead.sleepers s WHERE s.queue = queue) THEN
    PERFORM bulkhead.wake_sleeping(queue);
  END IF;
  IF current_setting('transaction_isolation') = 'read committed'
     AND pg_sequence_last_value('bulkhead.wake_gate') > 0 THEN
    IF pg_try_advisory_xact_lock(hashtext('bulkhead.wake_gate'), 0) THEN
      IF NOT EXISTS (SELECT 1 FROM bulkhead.sleepers) THEN
        PERFORM setval('bulkhead.wake_gate', 0);
      END IF;
    END IF;
  END IF;
END
$$;
COMMENT ON FUNCTION bulkhead.wake_queue(text) IS
  'Takes the sleeping marks of a queue and notifies its runners; closes the wake-up gate when '
  'no mark is left (migration 0027). Called by the enqueue trigger at COMMIT.';
GRANT EXECUTE ON FUNCTION bulkhead.wake_queue(text) TO PUBLIC;

-- As in 0014, with the gate's close. A queue without a mark while another queue has one (a
-- quiet tier's runner asleep beside a busy tier, which holds the gate open) costs two unlocked
-- looks, as 0014's one look did, and no call as the owner.
CREATE OR REPLACE FUNCTION bulkhead.wake_sleepers() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  flag constant text := 'bulkhead.woken.' || NEW.queue;
BEGIN
  IF current_setting(flag, true) IS DISTINCT FROM 'on' THEN
    PERFORM set_config(flag, 'on', true);
    IF EXISTS (SELECT 1 FROM bulkhead.sleepers s WHERE s.queue = NEW.queue)
       OR NOT EXISTS (SELECT 1 FROM bulkhead.sleepers) THEN
      PERFORM bulkhead.wake_queue(NEW.queue);
    END IF;
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER jobs_wake_sleepers ON bulkhead.jobs;
CREATE CONSTRAINT TRIGGER jobs_wake_sleepers AFTER INSERT ON bulkhead.jobs
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.state = 'available' AND NEW.scheduled_at <= now()
        AND pg_sequence_last_value('bulkhead.wake_gate') > 0)
  EXECUTE FUNCTION bulkhead.wake_sleepers();
