-- 0002_breaker, reversed. Parked jobs stay parked; 0001's route() parks only behind a breaker.
CREATE OR REPLACE FUNCTION bulkhead.route(channel_id bigint, context text) RETURNS bulkhead.route
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
  c record;
  r bulkhead.route;
BEGIN
  IF channel_id IS NULL THEN
    RAISE EXCEPTION '%channel_id is NULL', context USING ERRCODE = 'null_value_not_allowed';
  END IF;
  SELECT ch.enabled, ch.disabled_reason, ch.breaker_state, t.id AS tenant_id, t.tier
    INTO c
    FROM bulkhead.channels ch JOIN bulkhead.tenants t ON t.id = ch.tenant_id
   WHERE ch.id = channel_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION '%no channel with id %', context, channel_id
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  IF NOT c.enabled THEN
    RAISE EXCEPTION '%channel % is disabled: %', context, channel_id, c.disabled_reason
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'An operator re-enables it with: bulkhead channel enable ' || channel_id;
  END IF;
  r.tenant_id := c.tenant_id;
  r.queue := c.tier;
  IF c.breaker_state = 'closed' THEN
    r.state := 'available';
    r.priority := 1;
  ELSE
    -- Open or probing: the delivery waits parked, behind fresh work once it comes back.
    r.state := 'parked';
    r.priority := 3;
  END IF;
  RETURN r;
END
$$;
DROP INDEX bulkhead.jobs_channel_available;
CREATE INDEX jobs_channel_waiting ON bulkhead.jobs (channel_id)
  WHERE state IN ('available', 'parked');
DROP INDEX bulkhead.jobs_parked;
DROP INDEX bulkhead.channels_breaker_due;
ALTER TABLE bulkhead.channels
  DROP CONSTRAINT channels_breaker_probe_job_iff_half_open,
  DROP COLUMN breaker_reason,
  DROP COLUMN breaker_probe_job,
  DROP COLUMN paused;
