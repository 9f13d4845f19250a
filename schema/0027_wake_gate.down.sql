-- 0027_wake_gate, reversed: the wake-up trigger runs for every due job again (0014), and the
-- gate's sequence and functions are gone.
DROP TRIGGER jobs_wake_sleepers ON bulkhead.jobs;
CREATE CONSTRAINT TRIGGER jobs_wake_sleepers AFTER INSERT ON bulkhead.jobs
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.state = 'available' AND NEW.scheduled_at <= now())
  EXECUTE FUNCTION bulkhead.wake_sleepers();

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

DROP FUNCTION bulkhead.wake_queue(text);
DROP FUNCTION bulkhead.fell_asleep();
DROP FUNCTION bulkhead.open_wake_gate();
DROP SEQUENCE bulkhead.wake_gate;
