-- 0014_wake_once_per_sleep, reversed: every enqueuing commit notifies while a mark is there
-- (0010), and the marks have their primary key again.
CREATE OR REPLACE FUNCTION bulkhead.wake_sleepers() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  flag constant text := 'bulkhead.woken.' || NEW.queue;
BEGIN
  IF current_setting(flag, true) IS DISTINCT FROM 'on' THEN
    PERFORM set_config(flag, 'on', true);
    IF EXISTS (SELECT 1 FROM bulkhead.sleepers s WHERE s.queue = NEW.queue) THEN
      PERFORM pg_notify('bulkhead_jobs', NEW.queue);
    END IF;
  END IF;
  RETURN NULL;
END
$$;
DROP FUNCTION bulkhead.wake_sleeping(text);

DELETE FROM bulkhead.sleepers a
 USING bulkhead.sleepers b
 WHERE a.queue = b.queue AND a.node = b.node AND a.ctid < b.ctid;
DROP INDEX bulkhead.sleepers_queue;
ALTER TABLE bulkhead.sleepers ADD PRIMARY KEY (queue, node);
