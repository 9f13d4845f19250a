-- Reverses 0023_rejoin_after_the_update: the rejoin is migration 0013's BEFORE trigger again,
-- and the settle follows the change of state alone.
DROP TRIGGER jobs_ordering_rejoin ON bulkhead.jobs;
DROP TRIGGER jobs_ordering_settle_rejoin ON bulkhead.jobs;

CREATE OR REPLACE FUNCTION bulkhead.ordering_rejoined() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM bulkhead.lock_ordering_key(NEW.tenant_id, NEW.ordering_key);
  IF bulkhead.ordering_key_busy(NEW.channel_id, NEW.ordering_key, NEW.id) THEN
    NEW.scheduled_at := 'infinity';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER jobs_ordering_rejoin BEFORE UPDATE OF state ON bulkhead.jobs
  FOR EACH ROW
  WHEN (NEW.ordering_key IS NOT NULL
        AND OLD.state IN ('completed', 'discarded', 'cancelled')
        AND NEW.state IN ('available', 'parked'))
  EXECUTE FUNCTION bulkhead.ordering_rejoined();

CREATE CONSTRAINT TRIGGER jobs_ordering_settle_rejoin AFTER UPDATE OF state ON bulkhead.jobs
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.ordering_key IS NOT NULL AND NEW.scheduled_at = 'infinity'
        AND OLD.state IN ('completed', 'discarded', 'cancelled'))
  EXECUTE FUNCTION bulkhead.ordering_settle();
