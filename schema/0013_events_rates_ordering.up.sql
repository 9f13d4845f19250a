-- 0013_events_rates_ordering: what webhook senders expect on top of delivery (issue 33;
-- docs/events-rates-ordering.md; docs/adr/0021-ordering-and-rate-limits.md):
--
--   * event types: bulkhead.channels.event_types and bulkhead.publish(), one delivery to every
--     enabled channel of a tenant subscribed to a type, in one statement;
--   * rate limits: bulkhead.channels.rate_limit_per_s, held across the fleet by a token bucket
--     per channel in bulkhead.rate_buckets, which the nodes take from after each claim;
--   * ordering keys: bulkhead.jobs.ordering_key and bulkhead.enqueue(…, ordering_key).
--
-- How an ordering key holds its order without costing the claim anything: of a channel's live
-- deliveries with one key (available, executing, parked), only the oldest goes; every other one
-- waits `available` (or `parked`) with scheduled_at = 'infinity' — "held". The claim's windows
-- stop at the first job not yet due, so a held delivery is never read by a claim, however many
-- keys and held deliveries a channel has. When a delivery of the key ends (completed, discarded,
-- cancelled), the trigger jobs_ordering_release makes the oldest held one of its key due now.
-- A failing head retries on its own schedule and holds only its key; parking and unparking
-- keep scheduled_at, so a held delivery stays held through a breaker's opening.

-- ---------------------------------------------------------------------------------------------
-- Event types and rate limits: two settings of a channel.
-- ---------------------------------------------------------------------------------------------
-- Whether `types` is a channel's usable list of event types: NULL (every type), or a
-- one-dimensional array of 1 to 255-character names (empty: no type).
CREATE FUNCTION bulkhead.event_types_valid(types text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT types IS NULL
         OR coalesce(array_ndims(types), 1) = 1
            AND NOT EXISTS (SELECT 1 FROM unnest(types) AS t(name)
                             WHERE t.name IS NULL OR length(t.name) NOT BETWEEN 1 AND 255)
$$;

ALTER TABLE bulkhead.channels
  -- The event types the channel is subscribed to; NULL: every type, {}: none.
  ADD COLUMN event_types text[]
    CONSTRAINT channels_event_types_valid CHECK (bulkhead.event_types_valid(event_types)),
  -- Requests a second to the channel across the whole fleet; NULL: no limit.
  ADD COLUMN rate_limit_per_s double precision
    CONSTRAINT channels_rate_limit_positive
    CHECK (rate_limit_per_s IS NULL OR rate_limit_per_s > 0 AND rate_limit_per_s <= 1000000);

-- ---------------------------------------------------------------------------------------------
-- Ordering keys.
-- ---------------------------------------------------------------------------------------------
ALTER TABLE bulkhead.jobs
  ADD COLUMN ordering_key text
    CONSTRAINT jobs_ordering_key_length
    CHECK (ordering_key IS NULL OR length(ordering_key) BETWEEN 1 AND 255);

-- A key's live deliveries in enqueue order: what the enqueue looks at to decide whether a new
-- delivery is held, and what a release walks to find the next one. Only keyed live rows enter
-- it, so deliveries without a key, and every finished one, cost it nothing.
CREATE INDEX jobs_ordering ON bulkhead.jobs (channel_id, ordering_key, id)
  WHERE ordering_key IS NOT NULL AND state IN ('available', 'executing', 'parked');

-- Raises the error for an unusable ordering key, or returns.
CREATE FUNCTION bulkhead.check_ordering_key(ordering_key text, context text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF ordering_key IS NOT NULL AND length(ordering_key) NOT BETWEEN 1 AND 255 THEN
    RAISE EXCEPTION '%ordering_key must be 1 to 255 characters, not %', context,
      length(ordering_key) USING ERRCODE = 'invalid_parameter_value';
  END IF;
END
$$;

-- Serialises the enqueues (and replays) of one key of one tenant until their transactions end:
-- of two concurrent ones, the second sees the first's delivery and is held behind it, so enqueue
-- order is commit order. An advisory lock in a key space of Bulkhead's own (a hash of a prefix,
-- the tenant and the key); a hash collision only makes two keys wait for each other.
CREATE FUNCTION bulkhead.lock_ordering_key(tenant_id bigint, ordering_key text) RETURNS void
LANGUAGE sql VOLATILE AS $$
  SELECT pg_advisory_xact_lock(
           hashtextextended('bulkhead.ordering_key:' || tenant_id || ':' || ordering_key, 0))
$$;

-- Whether a new delivery of `ordering_key` to `channel_id` must be held: another one is live.
CREATE FUNCTION bulkhead.ordering_key_busy(channel_id bigint, ordering_key text,
                                           except_id bigint DEFAULT NULL) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM bulkhead.jobs j
                  WHERE j.channel_id = $1 AND j.ordering_key = $2
                    AND j.state IN ('available', 'executing', 'parked')
                    AND j.id IS DISTINCT FROM $3)
$$;

-- Makes the oldest held delivery of (channel, key) due now, unless one of the key already goes,
-- and notifies a sleeping runner of its queue as an enqueue would (0010). Returns its id.
CREATE FUNCTION bulkhead.release_ordering_key(channel_id bigint, ordering_key text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_variable
DECLARE
  next_id bigint;
  next_queue text;
  next_state text;
BEGIN
  IF EXISTS (SELECT 1 FROM bulkhead.jobs j
              WHERE j.channel_id = channel_id AND j.ordering_key = ordering_key
                AND j.state IN ('available', 'executing', 'parked')
                AND j.scheduled_at <> 'infinity') THEN
    RETURN NULL;
  END IF;
  UPDATE bulkhead.jobs AS j SET scheduled_at = now()
   WHERE j.id = (SELECT h.id FROM bulkhead.jobs h
                  WHERE h.channel_id = channel_id AND h.ordering_key = ordering_key
                    AND h.state IN ('available', 'executing', 'parked')
                    AND h.scheduled_at = 'infinity'
                  ORDER BY h.id LIMIT 1
                    -- Locked and rechecked: one being cancelled meanwhile is passed over for
                    -- the next, not released after its end (which would leave the rest held).
                    FOR UPDATE OF h)
  RETURNING j.id, j.queue, j.state INTO next_id, next_queue, next_state;
  IF next_state = 'available'
     AND EXISTS (SELECT 1 FROM bulkhead.sleepers s WHERE s.queue = next_queue) THEN
    PERFORM pg_notify('bulkhead_jobs', next_queue);
  END IF;
  RETURN next_id;
END
$$;

-- A keyed delivery ended: the next of its key goes. Runs as the role whose statement ended it
-- (a node's result, rescue, an operator's cancel); SECURITY DEFINER, so none needs more grants.
CREATE FUNCTION bulkhead.ordering_ended() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM bulkhead.release_ordering_key(NEW.channel_id, NEW.ordering_key);
  RETURN NULL;
END
$$;
CREATE TRIGGER jobs_ordering_release AFTER UPDATE OF state ON bulkhead.jobs
  FOR EACH ROW
  WHEN (NEW.ordering_key IS NOT NULL
        AND OLD.state IN ('available', 'executing', 'parked')
        AND NEW.state IN ('completed', 'discarded', 'cancelled'))
  EXECUTE FUNCTION bulkhead.ordering_ended();

-- A finished keyed delivery comes back (a replay): it waits behind its key's live deliveries,
-- and goes before the later ones (the oldest held goes first).
CREATE FUNCTION bulkhead.ordering_rejoined() RETURNS trigger
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

-- The race the release alone would lose: an enqueue holds its delivery behind a head whose end
-- a node is writing at that moment. The node's trigger cannot see the uncommitted delivery, and
-- the enqueue saw the head still live, so nothing would ever release it. So at COMMIT (a
-- deferred constraint trigger) a held delivery looks again: FOR SHARE waits for an end being
-- written to its key's going delivery and then sees it; if none of the key goes any more, the
-- oldest held one is released. The lock is held only from here to the commit (the node's result
-- write waits that long, a flush at most); no node ever waits for an application's open
-- transaction. Two enqueues of one key cannot both be here: lock_ordering_key serialises them.
CREATE FUNCTION bulkhead.ordering_settle() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM 1 FROM bulkhead.jobs j
   WHERE j.channel_id = NEW.channel_id AND j.ordering_key = NEW.ordering_key
     AND j.state IN ('available', 'executing', 'parked') AND j.scheduled_at <> 'infinity'
     FOR SHARE OF j;
  IF NOT FOUND THEN
    PERFORM bulkhead.release_ordering_key(NEW.channel_id, NEW.ordering_key);
  END IF;
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER jobs_ordering_settle_insert AFTER INSERT ON bulkhead.jobs
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.ordering_key IS NOT NULL AND NEW.scheduled_at = 'infinity')
  EXECUTE FUNCTION bulkhead.ordering_settle();
CREATE CONSTRAINT TRIGGER jobs_ordering_settle_rejoin AFTER UPDATE OF state ON bulkhead.jobs
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.ordering_key IS NOT NULL AND NEW.scheduled_at = 'infinity'
        AND OLD.state IN ('completed', 'discarded', 'cancelled'))
  EXECUTE FUNCTION bulkhead.ordering_settle();

REVOKE EXECUTE ON FUNCTION bulkhead.check_ordering_key(text, text),
  bulkhead.lock_ordering_key(bigint, text), bulkhead.ordering_key_busy(bigint, text, bigint),
  bulkhead.release_ordering_key(bigint, text), bulkhead.ordering_ended(),
  bulkhead.ordering_rejoined(), bulkhead.ordering_settle() FROM PUBLIC;

-- ---------------------------------------------------------------------------------------------
-- bulkhead.enqueue with an ordering key. The four-argument function is replaced, not
-- overloaded: beside a five-argument one with defaults, a call with two to four arguments would
-- match both and fail as ambiguous.
-- ---------------------------------------------------------------------------------------------
CREATE TEMPORARY TABLE enqueue_grantees AS
  SELECT a.grantee
    FROM pg_proc p, aclexplode(p.proacl) a
   WHERE p.oid = 'bulkhead.enqueue(bigint, jsonb, text, timestamptz)'::regprocedure
     AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner;
DROP FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz);

CREATE FUNCTION bulkhead.enqueue(channel_id bigint, payload jsonb,
                                 idempotency_key text DEFAULT NULL,
                                 scheduled_at timestamptz DEFAULT now(),
                                 ordering_key text DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  context constant text := 'bulkhead.enqueue: ';
  due timestamptz := coalesce(enqueue.scheduled_at, now());
  r bulkhead.route;
  job_id bigint;
BEGIN
  PERFORM bulkhead.check_delivery(enqueue.payload, enqueue.idempotency_key,
                                  bulkhead.max_payload_bytes(), context);
  PERFORM bulkhead.check_ordering_key(enqueue.ordering_key, context);
  r := bulkhead.route(enqueue.channel_id, context);
  IF enqueue.ordering_key IS NOT NULL THEN
    -- Behind a live delivery of the same key: held until it ends (see the migration's header).
    PERFORM bulkhead.lock_ordering_key(r.tenant_id, enqueue.ordering_key);
    IF bulkhead.ordering_key_busy(enqueue.channel_id, enqueue.ordering_key) THEN
      due := 'infinity';
    END IF;
  END IF;
  IF enqueue.idempotency_key IS NULL THEN
    -- No key, so no conflict is possible: a plain insert (migration 0011).
    INSERT INTO bulkhead.jobs AS j
           (queue, tenant_id, channel_id, state, priority, scheduled_at, payload, ordering_key)
    VALUES (r.queue, r.tenant_id, enqueue.channel_id, r.state, r.priority, due, enqueue.payload,
            enqueue.ordering_key)
    RETURNING j.id INTO job_id;
    RETURN job_id;
  END IF;
  INSERT INTO bulkhead.jobs AS j
         (queue, tenant_id, channel_id, state, priority, scheduled_at, payload, idempotency_key,
          ordering_key)
  VALUES (r.queue, r.tenant_id, enqueue.channel_id, r.state, r.priority, due, enqueue.payload,
          enqueue.idempotency_key, enqueue.ordering_key)
      ON CONFLICT (channel_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
  RETURNING j.id INTO job_id;
  IF job_id IS NULL THEN
    -- A duplicate: answer with the job that holds the key.
    SELECT j.id INTO job_id
      FROM bulkhead.jobs j
     WHERE j.channel_id = enqueue.channel_id AND j.idempotency_key = enqueue.idempotency_key;
  END IF;
  RETURN job_id;
END
$$;
REVOKE EXECUTE ON FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz, text) FROM PUBLIC;

-- ---------------------------------------------------------------------------------------------
-- bulkhead.publish: one event to every enabled channel of a tenant subscribed to its type.
-- ---------------------------------------------------------------------------------------------
CREATE FUNCTION bulkhead.publish(tenant_id bigint, event_type text, payload jsonb,
                                 idempotency_key text DEFAULT NULL,
                                 ordering_key text DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  context constant text := 'bulkhead.publish: ';
  tenant_tier text;
  created integer;
BEGIN
  IF publish.tenant_id IS NULL THEN
    RAISE EXCEPTION '%tenant_id is NULL', context USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF publish.event_type IS NULL THEN
    RAISE EXCEPTION '%event_type is NULL', context USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF length(publish.event_type) NOT BETWEEN 1 AND 255 THEN
    RAISE EXCEPTION '%event_type must be 1 to 255 characters, not %', context,
      length(publish.event_type) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM bulkhead.check_delivery(publish.payload, publish.idempotency_key,
                                  bulkhead.max_payload_bytes(), context);
  PERFORM bulkhead.check_ordering_key(publish.ordering_key, context);
  SELECT t.tier INTO tenant_tier FROM bulkhead.tenants t WHERE t.id = publish.tenant_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION '%no tenant with id %', context, publish.tenant_id
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  IF publish.ordering_key IS NOT NULL THEN
    PERFORM bulkhead.lock_ordering_key(publish.tenant_id, publish.ordering_key);
  END IF;
  -- One INSERT for every subscribed channel (channels_tenant), each row routed as route() and
  -- the claim would: parked behind a breaker that is not closed or a pause, held behind a live
  -- delivery of its key. Without an idempotency key, a plain insert, as enqueue's (0011).
  IF publish.idempotency_key IS NULL THEN
    INSERT INTO bulkhead.jobs
           (queue, tenant_id, channel_id, state, priority, scheduled_at, payload, ordering_key)
    SELECT tenant_tier, publish.tenant_id, ch.id,
           CASE WHEN ch.breaker_state = 'closed' AND NOT ch.paused THEN 'available'
                ELSE 'parked' END,
           CASE WHEN ch.breaker_state = 'closed' AND NOT ch.paused THEN 1 ELSE 3 END,
           CASE WHEN publish.ordering_key IS NOT NULL
                     AND bulkhead.ordering_key_busy(ch.id, publish.ordering_key)
                THEN 'infinity'::timestamptz ELSE now() END,
           publish.payload, publish.ordering_key
      FROM bulkhead.channels ch
     WHERE ch.tenant_id = publish.tenant_id AND ch.enabled
       AND (ch.event_types IS NULL OR publish.event_type = ANY (ch.event_types))
     ORDER BY ch.id;
  ELSE
    INSERT INTO bulkhead.jobs
           (queue, tenant_id, channel_id, state, priority, scheduled_at, payload,
            idempotency_key, ordering_key)
    SELECT tenant_tier, publish.tenant_id, ch.id,
           CASE WHEN ch.breaker_state = 'closed' AND NOT ch.paused THEN 'available'
                ELSE 'parked' END,
           CASE WHEN ch.breaker_state = 'closed' AND NOT ch.paused THEN 1 ELSE 3 END,
           CASE WHEN publish.ordering_key IS NOT NULL
                     AND bulkhead.ordering_key_busy(ch.id, publish.ordering_key)
                THEN 'infinity'::timestamptz ELSE now() END,
           publish.payload, publish.idempotency_key, publish.ordering_key
      FROM bulkhead.channels ch
     WHERE ch.tenant_id = publish.tenant_id AND ch.enabled
       AND (ch.event_types IS NULL OR publish.event_type = ANY (ch.event_types))
     ORDER BY ch.id
        ON CONFLICT (channel_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;
  END IF;
  GET DIAGNOSTICS created = ROW_COUNT;
  RETURN created;
END
$$;
REVOKE EXECUTE ON FUNCTION bulkhead.publish(bigint, text, jsonb, text, text) FROM PUBLIC;

-- ---------------------------------------------------------------------------------------------
-- Rate limits: a token bucket per limited channel, shared by the fleet (GCRA). `tat` is the
-- bucket's theoretical arrival time: a request may go at t when tat <= t + burst, and moves tat
-- on by 1/rate. The burst is one second's worth of requests, or one request for a limit under
-- 1/s. A node takes tokens for the jobs of limited channels a claim gave it (the statement
-- TakeTokens, worker/store/claim_store.sql) and hands back what it was not granted.
--
-- Unlogged: no WAL, no fsync; a crash or a failover empties it, and the buckets start full.
-- ---------------------------------------------------------------------------------------------
CREATE UNLOGGED TABLE bulkhead.rate_buckets (
  channel_id bigint      PRIMARY KEY,
  tat        timestamptz NOT NULL,
  -- Tokens the last taker asked for (its proposed row) and was granted (the stored row).
  granted    integer     NOT NULL DEFAULT 0
);
COMMENT ON TABLE bulkhead.rate_buckets IS
  'Token buckets of channels with a rate_limit_per_s, shared by the fleet. Unlogged: a crash '
  'empties it and every bucket starts full.';

-- ---------------------------------------------------------------------------------------------
-- Grants. 0009's grant_role_0009 names the four-argument enqueue; it is rewritten to name the
-- five-argument one and publish (the only change: a textual replacement of that one name in its
-- definition, so the rest of it stays exactly 0009's). The app part may also set a channel's
-- subscriptions and rate limit, as it sets its URL; the node part takes tokens.
-- ---------------------------------------------------------------------------------------------
DO $$
DECLARE
  old_name constant text := 'bulkhead.enqueue(bigint, jsonb, text, timestamptz), ';
  definition text := pg_get_functiondef('bulkhead.grant_role_0009(text, text)'::regprocedure);
BEGIN
  IF position(old_name IN definition) = 0 THEN
    RAISE EXCEPTION '0013: bulkhead.grant_role_0009 does not name %', old_name;
  END IF;
  EXECUTE replace(definition, old_name,
                  'bulkhead.enqueue(bigint, jsonb, text, timestamptz, text), '
                  'bulkhead.publish(bigint, text, jsonb, text, text), ');
END
$$;

ALTER FUNCTION bulkhead.grant_role(text, text) RENAME TO grant_role_0012;
CREATE FUNCTION bulkhead.grant_role(role_name text, part text) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM bulkhead.grant_role_0012(role_name, part);
  IF part = 'app' THEN
    EXECUTE format('GRANT UPDATE (event_types, rate_limit_per_s) ON bulkhead.channels TO %s',
                   quote_ident(role_name));
  ELSIF part = 'node' THEN
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON bulkhead.rate_buckets TO %s',
                   quote_ident(role_name));
  END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION bulkhead.grant_role(text, text) FROM PUBLIC;
COMMENT ON FUNCTION bulkhead.grant_role(text, text) IS
  'Grants a role exactly what the part app, node or console needs (bulkhead grant).';

-- Roles granted before this migration keep working without a new `bulkhead grant`: who could
-- run the old enqueue runs the new one and publish, and a node's role (the part with DELETE on
-- jobs) takes tokens.
DO $$
DECLARE
  grantee oid;
  who text;
BEGIN
  FOR grantee IN SELECT DISTINCT e.grantee FROM enqueue_grantees e LOOP
    who := CASE WHEN grantee = 0 THEN 'PUBLIC' ELSE grantee::regrole::text END;
    EXECUTE format('GRANT EXECUTE ON FUNCTION '
                   'bulkhead.enqueue(bigint, jsonb, text, timestamptz, text), '
                   'bulkhead.publish(bigint, text, jsonb, text, text) TO %s', who);
  END LOOP;
  FOR grantee IN
    SELECT DISTINCT a.grantee
      FROM pg_class c, aclexplode(c.relacl) a
     WHERE c.oid = 'bulkhead.jobs'::regclass AND a.privilege_type = 'DELETE'
       AND a.grantee <> c.relowner
  LOOP
    who := CASE WHEN grantee = 0 THEN 'PUBLIC' ELSE grantee::regrole::text END;
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON bulkhead.rate_buckets TO %s', who);
  END LOOP;
END
$$;
DROP TABLE enqueue_grantees;
