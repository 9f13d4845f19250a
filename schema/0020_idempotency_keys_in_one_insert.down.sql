-- 0020_idempotency_keys_in_one_insert, reversed: bulkhead.enqueue_many and bulkhead.publish as
-- 0019 left them, a call's keys taken one item (or one channel) at a time.
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
  holders bigint[];
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

  -- The ids are drawn here and inserted below, after a route() per channel: so the
  -- transaction takes the lock its INSERT would take first, before it draws them (migration
  -- 0018). ONLY: the lock the leader lists is the one on jobs itself, which is
  -- all an INSERT takes up front on a jobs in ranges of ids (ADR 0026), not one on each range.
  LOCK TABLE ONLY bulkhead.jobs IN ROW EXCLUSIVE MODE;
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

  -- Each item with a key, in order, takes it or learns the job that holds it: an older one,
  -- or an earlier item of this call (whose id is among `ids`, and whose job is inserted
  -- below).
  holders := ids;
  IF idempotency_keys IS NOT NULL THEN
    FOR item IN
      SELECT u.channel_id, u.key, u.ord
        FROM unnest(channel_ids, idempotency_keys) WITH ORDINALITY AS u(channel_id, key, ord)
       WHERE u.key IS NOT NULL
       ORDER BY u.ord
    LOOP
      holders[item.ord] := bulkhead.hold_idempotency_key(item.channel_id, item.key,
                                                          ids[item.ord], ids);
    END LOOP;
  END IF;

  -- The items that hold their own id: every item without a key, and each key's first.
  INSERT INTO bulkhead.jobs AS j
         (id, queue, tenant_id, channel_id, state, priority, scheduled_at, payload,
          idempotency_key)
  SELECT ids[i.ord], rt.queue, rt.tenant_id, i.channel_id, rt.state, rt.priority,
         coalesce(i.scheduled_at, now()), i.payload, i.key
    FROM unnest(channel_ids, payloads, idempotency_keys, scheduled_ats)
         WITH ORDINALITY AS i(channel_id, payload, key, scheduled_at, ord)
    JOIN unnest(route_channels, route_tenants, route_queues, route_states, route_priorities)
         AS rt(channel_id, tenant_id, queue, state, priority) ON rt.channel_id = i.channel_id
   WHERE holders[i.ord] = ids[i.ord]
   ORDER BY i.ord;

  -- Each item answers with the job that holds its key: its own, or the one it duplicates.
  RETURN holders;
END
$$;


CREATE OR REPLACE FUNCTION bulkhead.publish(tenant_id bigint, event_type text, payload jsonb,
                                 idempotency_key text DEFAULT NULL,
                                 ordering_key text DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  context constant text := 'bulkhead.publish: ';
  tenant_tier text;
  created integer;
  subscriber record;
  job_id bigint;
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
    -- With a key: per channel, the id first (under the lock an INSERT would take, ADR 0027),
    -- then the key, then the delivery unless the key is another job's on that channel
    -- (migration 0019).
    LOCK TABLE ONLY bulkhead.jobs IN ROW EXCLUSIVE MODE;
    created := 0;
    FOR subscriber IN
      SELECT c.id, c.breaker_state = 'closed' AND NOT c.paused AS flows
        FROM bulkhead.channels c
       WHERE c.tenant_id = publish.tenant_id AND c.enabled
         AND (c.event_types IS NULL OR publish.event_type = ANY (c.event_types))
       ORDER BY c.id
    LOOP
      job_id := nextval(pg_get_serial_sequence('bulkhead.jobs', 'id'));
      CONTINUE WHEN bulkhead.hold_idempotency_key(subscriber.id, publish.idempotency_key, job_id)
                    <> job_id;
      INSERT INTO bulkhead.jobs
             (id, queue, tenant_id, channel_id, state, priority, scheduled_at, payload,
              idempotency_key, ordering_key)
      VALUES (job_id, tenant_tier, publish.tenant_id, subscriber.id,
              CASE WHEN subscriber.flows THEN 'available' ELSE 'parked' END,
              CASE WHEN subscriber.flows THEN 1 ELSE 3 END,
              CASE WHEN publish.ordering_key IS NOT NULL
                        AND bulkhead.ordering_key_busy(subscriber.id, publish.ordering_key)
                   THEN 'infinity'::timestamptz ELSE now() END,
              publish.payload, publish.idempotency_key, publish.ordering_key);
      created := created + 1;
    END LOOP;
    RETURN created;
  END IF;
  GET DIAGNOSTICS created = ROW_COUNT;
  RETURN created;
END
$$;
