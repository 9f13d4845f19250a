-- 0002_breaker: what the circuit breaker, parking, pausing and the per-node caps need beyond
-- 0001's columns.
--
-- The breaker's lifecycle (docs/breaker.md draws it; worker/job_store.cc holds the statements):
--   closed     deliveries flow; nodes count failures and slow calls in memory
--   open       the channel's waiting backlog is parked; new deliveries are inserted parked;
--              at breaker_probe_at exactly one node may take one parked job as a probe
--   half_open  the probe (breaker_probe_job) is in flight; by breaker_probe_at it must have
--              answered, or any node re-opens the breaker
-- Every transition is one compare-and-set statement that also parks or unparks the backlog.

ALTER TABLE bulkhead.channels
  -- An operator's hold: the channel's deliveries wait parked, as behind an open breaker, until
  -- it is resumed. Independent of the breaker, which keeps its own state meanwhile.
  ADD COLUMN paused            boolean NOT NULL DEFAULT false,
  -- While half_open: the job sent as the probe. Closing and re-opening compare on it, so only
  -- the answer to this probe moves the breaker on.
  ADD COLUMN breaker_probe_job bigint,
  -- Why the breaker last opened ("5 failures in a row, last: timeout: …"), for operators.
  ADD COLUMN breaker_reason    text,
  ADD CONSTRAINT channels_breaker_probe_job_iff_half_open
    CHECK ((breaker_state = 'half_open') = (breaker_probe_job IS NOT NULL));

-- The breakers that are not closed, by when something is due: a probe (open) or the end of
-- a probe's time (half_open). Nodes look here every second; it holds only broken channels.
CREATE INDEX channels_breaker_due ON bulkhead.channels (breaker_probe_at)
  WHERE breaker_state <> 'closed';

-- A channel's parked jobs in the order a probe takes them, and the skip scan of the parked
-- reconciler (distinct channel_id). Parked rows are in no other index of the claim path.
CREATE INDEX jobs_parked ON bulkhead.jobs (channel_id, scheduled_at, id)
  WHERE state = 'parked';

-- A channel's claimable jobs in claim order. It replaces 0001's jobs_channel_waiting (which held
-- available and parked rows, unordered): parking, demoting and a set-tier move find a channel's
-- available rows here and its parked rows in jobs_parked, and a node refills a channel that is
-- below its cap with the channel's next jobs without scanning the queue.
DROP INDEX bulkhead.jobs_channel_waiting;
CREATE INDEX jobs_channel_available ON bulkhead.jobs (channel_id, priority, scheduled_at, id)
  WHERE state = 'available';

-- route(): as in 0001, and a paused channel's deliveries are inserted parked too.
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
  SELECT ch.enabled, ch.disabled_reason, ch.breaker_state, ch.paused, t.id AS tenant_id, t.tier
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
  IF c.breaker_state = 'closed' AND NOT c.paused THEN
    r.state := 'available';
    r.priority := 1;
  ELSE
    -- Open, probing or paused: the delivery waits parked, behind fresh work once it returns.
    r.state := 'parked';
    r.priority := 3;
  END IF;
  RETURN r;
END
$$;
