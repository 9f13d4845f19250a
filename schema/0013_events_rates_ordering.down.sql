-- 0013_events_rates_ordering, reversed: no event types, rate limits or ordering keys;
-- bulkhead.enqueue with four arguments as 0011 left it, and bulkhead.grant_role as 0012 left it.
-- The keys, subscriptions and limits are dropped with their columns; held deliveries (due at
-- 'infinity') are made due now first, so none is left waiting for a release that no longer
-- exists.
UPDATE bulkhead.jobs SET scheduled_at = now()
 WHERE ordering_key IS NOT NULL AND state IN ('available', 'parked')
   AND scheduled_at = 'infinity';

DROP FUNCTION bulkhead.grant_role(text, text);
ALTER FUNCTION bulkhead.grant_role_0012(text, text) RENAME TO grant_role;
DO $$
DECLARE
  new_name constant text := 'bulkhead.enqueue(bigint, jsonb, text, timestamptz, text), '
                            'bulkhead.publish(bigint, text, jsonb, text, text), ';
BEGIN
  EXECUTE replace(pg_get_functiondef('bulkhead.grant_role_0009(text, text)'::regprocedure),
                  new_name, 'bulkhead.enqueue(bigint, jsonb, text, timestamptz), ');
END
$$;

DROP TABLE bulkhead.rate_buckets;
DROP FUNCTION bulkhead.publish(bigint, text, jsonb, text, text);

CREATE TEMPORARY TABLE enqueue_grantees AS
  SELECT a.grantee
    FROM pg_proc p, aclexplode(p.proacl) a
   WHERE p.oid = 'bulkhead.enqueue(bigint, jsonb, text, timestamptz, text)'::regprocedure
     AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner;
DROP FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz, text);

-- The enqueue of 0011, as it was.
CREATE FUNCTION bulkhead.enqueue(channel_id bigint, payload jsonb,
                                 idempotency_key text DEFAULT NULL,
                                 scheduled_at timestamptz DEFAULT now()) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  context constant text := 'bulkhead.enqueue: ';
  due constant timestamptz := coalesce(enqueue.scheduled_at, now());
  r bulkhead.route;
  job_id bigint;
BEGIN
  PERFORM bulkhead.check_delivery(enqueue.payload, enqueue.idempotency_key,
                                  bulkhead.max_payload_bytes(), context);
  r := bulkhead.route(enqueue.channel_id, context);
  IF enqueue.idempotency_key IS NULL THEN
    -- No key, so no conflict is possible: a plain insert (see the migration's header).
    INSERT INTO bulkhead.jobs AS j
           (queue, tenant_id, channel_id, state, priority, scheduled_at, payload)
    VALUES (r.queue, r.tenant_id, enqueue.channel_id, r.state, r.priority, due, enqueue.payload)
    RETURNING j.id INTO job_id;
    RETURN job_id;
  END IF;
  INSERT INTO bulkhead.jobs AS j
         (queue, tenant_id, channel_id, state, priority, scheduled_at, payload, idempotency_key)
  VALUES (r.queue, r.tenant_id, enqueue.channel_id, r.state, r.priority, due, enqueue.payload,
          enqueue.idempotency_key)
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

REVOKE EXECUTE ON FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz) FROM PUBLIC;
DO $$
DECLARE
  grantee oid;
BEGIN
  FOR grantee IN SELECT DISTINCT e.grantee FROM enqueue_grantees e LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz) '
                   'TO %s', CASE WHEN grantee = 0 THEN 'PUBLIC' ELSE grantee::regrole::text END);
  END LOOP;
END
$$;
DROP TABLE enqueue_grantees;

DROP TRIGGER jobs_ordering_settle_rejoin ON bulkhead.jobs;
DROP TRIGGER jobs_ordering_settle_insert ON bulkhead.jobs;
DROP TRIGGER jobs_ordering_rejoin ON bulkhead.jobs;
DROP TRIGGER jobs_ordering_release ON bulkhead.jobs;
DROP FUNCTION bulkhead.ordering_settle();
DROP FUNCTION bulkhead.ordering_rejoined();
DROP FUNCTION bulkhead.ordering_ended();
DROP FUNCTION bulkhead.release_ordering_key(bigint, text);
DROP FUNCTION bulkhead.ordering_key_busy(bigint, text, bigint);
DROP FUNCTION bulkhead.lock_ordering_key(bigint, text);
DROP FUNCTION bulkhead.check_ordering_key(text, text);
DROP INDEX bulkhead.jobs_ordering;
ALTER TABLE bulkhead.jobs DROP COLUMN ordering_key;
ALTER TABLE bulkhead.channels DROP COLUMN rate_limit_per_s, DROP COLUMN event_types;
DROP FUNCTION bulkhead.event_types_valid(text[]);
