-- 0014_wake_once_per_sleep: the enqueue that notifies a sleeping runner takes its mark away, so
-- that one sleep costs one notification (issue 30, goal 1; ADR 0022, which amends ADR 0019).
--
-- Why. Since 0010 an enqueue notifies only while a runner of its queue is marked asleep in
-- bulkhead.sleepers, and the runner deleted its mark at its first claim that took work. Until
-- then every enqueuing commit of the queue notified, and each notification takes PostgreSQL's
-- database-wide notification lock at COMMIT and holds it through the flush: with durability
-- on, 16 clients committed 0.12 of a plain insert's rate while a runner slept (0.29 with none).
-- An idle node is the common case, and a burst of the application's commits reaches it asleep.
--
-- Now the first commit that finds a mark deletes it and notifies; the commits after it find no
-- mark and take no lock. The runner writes its mark again when it is about to wait once more.
--
--   * bulkhead.wake_sleeping(queue) deletes the queue's marks that no other commit is taking
--     (FOR UPDATE SKIP LOCKED: an enqueue never waits here) and notifies if it deleted any.
--     SECURITY DEFINER: the application's roles need no write on bulkhead.sleepers.
--   * The trigger function looks first without a lock (most commits find no mark) and calls it
--     only when a mark is there.
--   * A runner no longer deletes its mark when a claim takes work: the next enqueue does, and
--     notifies it once. Nothing a runner writes can now wait for an application's commit.
--   * The primary key goes: a runner writes its mark with INSERT … WHERE NOT EXISTS, which
--     never waits on a mark another transaction is deleting (a unique check would, until that
--     transaction ended). One thread writes each (queue, node) mark, so none is doubled.
--
-- A commit that skipped a mark locked by another commit sends nothing; that other commit
-- notifies. If it fails after its trigger ran (a later deferred check), the mark comes back
-- and the runner finds the job by its poll, as in 0010's narrow race.

ALTER TABLE bulkhead.sleepers DROP CONSTRAINT sleepers_pkey;
CREATE INDEX sleepers_queue ON bulkhead.sleepers (queue, node);

CREATE FUNCTION bulkhead.wake_sleeping(queue text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_variable
BEGIN
  DELETE FROM bulkhead.sleepers s
   WHERE s.ctid = ANY (ARRAY(SELECT m.ctid FROM bulkhead.sleepers m
                              WHERE m.queue = queue FOR UPDATE SKIP LOCKED));
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM pg_notify('bulkhead_jobs', queue);
  RETURN true;
END
$$;
COMMENT ON FUNCTION bulkhead.wake_sleeping(text) IS
  'Takes the sleeping marks of a queue that no other commit is taking and notifies its runners '
  'once (migration 0014). Called by the enqueue trigger at COMMIT.';
-- The trigger runs as whatever role enqueues.
GRANT EXECUTE ON FUNCTION bulkhead.wake_sleeping(text) TO PUBLIC;

-- As in 0010, but the mark is taken, not only looked at.
CREATE OR REPLACE FUNCTION bulkhead.wake_sleepers() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  flag constant text := 'bulkhead.woken.' || NEW.queue;
BEGIN
  IF current_setting(flag, true) IS DISTINCT FROM 'on' THEN
    PERFORM set_config(flag, 'on', true);
    IF EXISTS (SELECT 1 FROM bulkhead.sleepers s WHERE s.queue = NEW.queue) THEN
      PERFORM bulkhead.wake_sleeping(NEW.queue);
    END IF;
  END IF;
  RETURN NULL;
END
$$;
