-- 0019_idempotency_keys: an idempotency key is held by a row of bulkhead.idempotency_keys, not
-- by a unique index on jobs (ADR 0026, the first step of its move into ranges of ids).
--
-- Why. ADR 0026 splits bulkhead.jobs into ranges of ids. A unique index on a partitioned table
-- must hold the partition key, so (channel_id, idempotency_key) can no longer be unique on jobs
-- itself. A table of its own holds each key with the id of the job it names.
--
-- An enqueue with a key (enqueue, enqueue_many, publish), in order:
--   1. takes the ROW EXCLUSIVE lock on jobs and draws the job's id: an id is drawn only under
--      that lock, which the claim floor relies on (ADR 0027, migration 0018);
--   2. inserts (channel_id, key, id) with ON CONFLICT DO NOTHING. A second enqueue of the key
--      waits there for the first to commit or roll back, as it waited on the unique index;
--   3. inserts the job only when it took the key; a duplicate answers with the id that holds
--      the key (hold_idempotency_key).
-- The job's row is inserted as before, key included, without ON CONFLICT: jobs.idempotency_key
-- stays for its readers (the console, operators' queries). Enqueues without a key write
-- nothing new and run as before.
--
-- A key whose job is gone is free, as it was when the index was the job's own. The leader's
-- prune deletes the key with its job (PruneFinished, worker/store/fleet_store.sql). A job
-- deleted another way (by hand, a TRUNCATE) leaves its key behind, and the next enqueue of the
-- key finds no job with that id and takes the key over.
--
-- The live move. The migration holds jobs against writes (SHARE) from before it copies the
-- existing keys until it commits, so no key is committed between the copy and the index's
-- drop: enqueues wait for the migration, which reads the keyed rows through the index it then
-- drops.
LOCK TABLE bulkhead.jobs IN SHARE MODE;

CREATE TABLE bulkhead.idempotency_keys (
  channel_id bigint NOT NULL,
  key        text   NOT NULL,
  job_id     bigint NOT NULL,
  CONSTRAINT idempotency_keys_pkey PRIMARY KEY (channel_id, key)
);
COMMENT ON TABLE bulkhead.idempotency_keys IS
  'The job that holds each idempotency key of a channel (migration 0019, ADR 0026). Written by '
  'the enqueue functions, deleted with its job by the prune.';

INSERT INTO bulkhead.idempotency_keys (channel_id, key, job_id)
  SELECT j.channel_id, j.idempotency_key, j.id
    FROM bulkhead.jobs j
   WHERE j.idempotency_key IS NOT NULL;

DROP INDEX bulkhead.jobs_idempotency;

-- Takes the key (channel_id, key) for the job `job_id`, or finds the job that holds it.
-- Returns `job_id` when the caller now holds the key, and must insert that job in its
-- transaction; otherwise the id of the job that holds it. `pending`: ids the caller will
-- insert later in this call (enqueue_many's), whose jobs are not in the table yet.
CREATE FUNCTION bulkhead.hold_idempotency_key(channel_id bigint, key text, job_id bigint,
                                              pending bigint[] DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  holder bigint;
BEGIN
  -- A turn ends in a return unless the key changed hands between two of its statements (the
  -- prune deleted it, or another enqueue took over a free key): a commit in that gap. So the
  -- turns are bounded, and the last one's failure is a serialization failure to retry.
  FOR turn IN 1..100 LOOP
    INSERT INTO bulkhead.idempotency_keys AS k (channel_id, key, job_id)
    VALUES (hold_idempotency_key.channel_id, hold_idempotency_key.key,
            hold_idempotency_key.job_id)
        ON CONFLICT ON CONSTRAINT idempotency_keys_pkey DO NOTHING;
    IF FOUND THEN
      RETURN hold_idempotency_key.job_id;
    END IF;
    -- Taken. Each statement here reads a snapshot newer than the last (READ COMMITTED), so
    -- once it sees the key it sees the job committed with it.
    SELECT k.job_id INTO holder
      FROM bulkhead.idempotency_keys k
     WHERE k.channel_id = hold_idempotency_key.channel_id AND k.key = hold_idempotency_key.key;
    IF FOUND THEN
      IF holder = ANY (pending) OR EXISTS (SELECT FROM bulkhead.jobs j WHERE j.id = holder) THEN
        RETURN holder;
      END IF;
      -- Its job is gone: the key is free. Taken over from that job only, so that of two
      -- enqueues taking it over at once, the second finds the first's and turns again.
      UPDATE bulkhead.idempotency_keys k
         SET job_id = hold_idempotency_key.job_id
       WHERE k.channel_id = hold_idempotency_key.channel_id
         AND k.key = hold_idempotency_key.key AND k.job_id = holder;
      IF FOUND THEN
        RETURN hold_idempotency_key.job_id;
      END IF;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'bulkhead: idempotency key % of channel % kept changing hands', key, channel_id
    USING ERRCODE = 'serialization_failure';
END
$$;
REVOKE EXECUTE ON FUNCTION bulkhead.hold_idempotency_key(bigint, text, bigint, bigint[])
  FROM PUBLIC;

-- The enqueue functions as 0013 (enqueue, publish) and 0018 (enqueue_many) left them, with a
-- key taken through bulkhead.idempotency_keys.

CREATE OR REPLACE FUNCTION bulkhead.enqueue(channel_id bigint, payload jsonb,
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
  holder bigint;
BEGIN
  PERFORM bulkhead.check_delivery(enqueue.payload, enqueue.idempotency_key,
                                  bulkhead.max_payload_bytes(), context);
  PERFORM bulkhead.check_ordering_key(enqueue.ordering_key, context);
  r := bulkhead.route(enqueue.channel_id, context);
  IF enqueue.ordering_key IS NOT NULL THEN
    -- Behind a live delivery of the same key: held until it ends (migration 0013).
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
  -- With a key: the id first (under the lock an INSERT would take, ADR 0027), then the key,
  -- then the job, unless the key is another job's (migration 0019).
  LOCK TABLE ONLY bulkhead.jobs IN ROW EXCLUSIVE MODE;
  job_id := nextval(pg_get_serial_sequence('bulkhead.jobs', 'id'));
  holder := bulkhead.hold_idempotency_key(enqueue.channel_id, enqueue.idempotency_key, job_id);
  IF holder <> job_id THEN
    -- A duplicate: answer with the job that holds the key.
    RETURN holder;
  END IF;
  INSERT INTO bulkhead.jobs AS j
         (id, queue, tenant_id, channel_id, state, priority, scheduled_at, payload,
          idempotency_key, ordering_key)
  VALUES (job_id, r.queue, r.tenant_id, enqueue.channel_id, r.state, r.priority, due,
          enqueue.payload, enqueue.idempotency_key, enqueue.ordering_key);
  RETURN job_id;
END
$$;


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


-- The node part prunes keys with their jobs. 0017's function stays, as grant_role_0017.
ALTER FUNCTION bulkhead.grant_role(text, text) RENAME TO grant_role_0017;
CREATE FUNCTION bulkhead.grant_role(role_name text, part text) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM bulkhead.grant_role_0017(role_name, part);
  IF part = 'node' THEN
    EXECUTE format('GRANT SELECT, DELETE ON bulkhead.idempotency_keys TO %s',
                   quote_ident(role_name));
  END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION bulkhead.grant_role(text, text) FROM PUBLIC;
COMMENT ON FUNCTION bulkhead.grant_role(text, text) IS
  'Grants a role exactly what the part app, node or console needs (bulkhead grant).';

-- Roles granted before this migration keep working without a new `bulkhead grant`: whoever may
-- delete jobs (the node part) may delete their keys.
DO $$
DECLARE
  grantee oid;
BEGIN
  FOR grantee IN
    SELECT DISTINCT a.grantee
      FROM pg_class c, aclexplode(c.relacl) a
     WHERE c.oid = 'bulkhead.jobs'::regclass AND a.privilege_type = 'DELETE'
       AND a.grantee <> c.relowner
  LOOP
    EXECUTE format('GRANT SELECT, DELETE ON bulkhead.idempotency_keys TO %s',
                   CASE WHEN grantee = 0 THEN 'PUBLIC' ELSE quote_ident(grantee::regrole::text) END);
  END LOOP;
END
$$;
