-- 0018_enqueue_many_locks_before_ids, reversed: bulkhead.enqueue_many as 0010 left it, the ids
-- drawn before the lock its INSERT takes.
CREATE OR REPLACE FUNCTION bulkhead.enqueue_many(channel_ids bigint[], payloads jsonb[],
                                      idempotency_keys text[] DEFAULT NULL,
                                      scheduled_ats timestamptz[] DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  caller constant text := 'bulkhead.enqueue_many';
  n integer := cardinality(channel_ids);
  max_bytes integer := bulkhead.max_payload_bytes();
  item record;
  r bulkhead.route;
  route_channels bigint[] := '{}';
  route_tenants bigint[] := '{}';
  route_queues text[] := '{}';
  route_states text[] := '{}';
  route_priorities smallint[] := '{}';
  ids bigint[];
BEGIN
  IF channel_ids IS NULL OR payloads IS NULL THEN
    RAISE EXCEPTION '%: channel_ids and payloads must not be NULL', caller
      USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF cardinality(payloads) <> n
     OR coalesce(cardinality(idempotency_keys), n) <> n
     OR coalesce(cardinality(scheduled_ats), n) <> n THEN
    RAISE EXCEPTION '%: the arrays differ in length (% channel ids, % payloads, % keys, % times)',
      caller, n, cardinality(payloads), coalesce(cardinality(idempotency_keys)::text, 'no'),
      coalesce(cardinality(scheduled_ats)::text, 'no')
      USING ERRCODE = 'array_subscript_error';
  END IF;
  IF n = 0 THEN
    RETURN '{}';
  END IF;

  FOR item IN
    SELECT u.payload, u.key, u.ord
      FROM unnest(payloads, idempotency_keys) WITH ORDINALITY AS u(payload, key, ord)
  LOOP
    PERFORM bulkhead.check_delivery(item.payload, item.key, max_bytes,
      caller || ': item ' || item.ord || ': ');
  END LOOP;

  ids := ARRAY(SELECT nextval(pg_get_serial_sequence('bulkhead.jobs', 'id'))
                 FROM generate_series(1, n));

  -- One route per distinct channel, in the order of first use, so that the error for a NULL,
  -- unknown or disabled channel names the first item that uses it.
  FOR item IN
    SELECT u.channel_id, min(u.ord) AS first
      FROM unnest(channel_ids) WITH ORDINALITY AS u(channel_id, ord)
     GROUP BY u.channel_id
     ORDER BY first
  LOOP
    r := bulkhead.route(item.channel_id,
      caller || ': item ' || item.first || ': ');
    route_channels := route_channels || item.channel_id;
    route_tenants := route_tenants || r.tenant_id;
    route_queues := route_queues || r.queue;
    route_states := route_states || r.state;
    route_priorities := route_priorities || r.priority;
  END LOOP;

  INSERT INTO bulkhead.jobs AS j
         (id, queue, tenant_id, channel_id, state, priority, scheduled_at, payload,
          idempotency_key)
  SELECT ids[i.ord], rt.queue, rt.tenant_id, i.channel_id, rt.state, rt.priority,
         coalesce(i.scheduled_at, now()), i.payload, i.key
    FROM unnest(channel_ids, payloads, idempotency_keys, scheduled_ats)
         WITH ORDINALITY AS i(channel_id, payload, key, scheduled_at, ord)
    JOIN unnest(route_channels, route_tenants, route_queues, route_states, route_priorities)
         AS rt(channel_id, tenant_id, queue, state, priority) ON rt.channel_id = i.channel_id
   ORDER BY i.ord
      ON CONFLICT (channel_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;

  -- Items with a key answer with the job that holds the key now: the one just inserted, or
  -- the older one that made this insert a duplicate.
  RETURN ARRAY(
    SELECT CASE WHEN u.key IS NULL THEN ids[u.ord]
                ELSE (SELECT j.id FROM bulkhead.jobs j
                       WHERE j.channel_id = u.channel_id AND j.idempotency_key = u.key)
           END
      FROM unnest(channel_ids, idempotency_keys) WITH ORDINALITY AS u(channel_id, key, ord)
     ORDER BY u.ord);
END
$$;

