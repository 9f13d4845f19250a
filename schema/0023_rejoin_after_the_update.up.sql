-- 0023_rejoin_after_the_update: no BEFORE trigger on bulkhead.jobs any more, so that an UPDATE
-- of a job does not lock its row first (issue 30, goal 3; ADR 0026).
--
-- Migration 0013's jobs_ordering_rejoin was a BEFORE UPDATE OF state row trigger. Whatever its
-- column list and its WHEN, PostgreSQL 15 fetches and locks the old row for a BEFORE UPDATE row
-- trigger before it looks at either, and a row lock is a WAL record of its own (Heap/LOCK, 54
-- bytes). So every result write, park, unpark, rescue and hand-back locked each of its rows
-- once more than the update needed: 2.1 lock records a delivery over the drain, where the
-- claim's FOR UPDATE is the only one the design asks for (pg_waldump, 2026-12-06). The claim's
-- own update paid nothing: its rows are already locked by it.
--
-- The rejoin (a finished keyed delivery replayed waits behind its key's live ones) now runs
-- AFTER the row is updated, with the same WHEN: it takes the key's lock, and where the key is
-- busy it sets the row's scheduled_at to 'infinity' in an UPDATE of its own, within the same
-- statement, so no other transaction sees the row in between. An AFTER row trigger whose WHEN
-- is false costs nothing and locks nothing. Only replays of keyed deliveries (rare) pay a
-- second row version.
--
-- The settle at commit (ordering_settle) followed the held row through the state's change,
-- whose NEW.scheduled_at the BEFORE trigger had set. The hold is now a change of scheduled_at,
-- so jobs_ordering_settle_rejoin also fires on that change: an update of state or scheduled_at
-- that leaves a keyed row held, coming from a finished state or from a row that was not held.
-- Only the rejoin's own update does the second (the release sets now(), a hold on enqueue is
-- an INSERT).
DROP TRIGGER jobs_ordering_rejoin ON bulkhead.jobs;
DROP TRIGGER jobs_ordering_settle_rejoin ON bulkhead.jobs;

CREATE OR REPLACE FUNCTION bulkhead.ordering_rejoined() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM bulkhead.lock_ordering_key(NEW.tenant_id, NEW.ordering_key);
  IF bulkhead.ordering_key_busy(NEW.channel_id, NEW.ordering_key, NEW.id) THEN
    UPDATE bulkhead.jobs AS j SET scheduled_at = 'infinity' WHERE j.id = NEW.id;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER jobs_ordering_rejoin AFTER UPDATE OF state ON bulkhead.jobs
  FOR EACH ROW
  WHEN (NEW.ordering_key IS NOT NULL
        AND OLD.state IN ('completed', 'discarded', 'cancelled')
        AND NEW.state IN ('available', 'parked'))
  EXECUTE FUNCTION bulkhead.ordering_rejoined();

CREATE CONSTRAINT TRIGGER jobs_ordering_settle_rejoin AFTER UPDATE OF state, scheduled_at
  ON bulkhead.jobs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.ordering_key IS NOT NULL AND NEW.scheduled_at = 'infinity'
        AND (OLD.state IN ('completed', 'discarded', 'cancelled')
             OR OLD.scheduled_at <> 'infinity'))
  EXECUTE FUNCTION bulkhead.ordering_settle();
