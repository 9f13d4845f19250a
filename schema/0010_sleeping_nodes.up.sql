-- 0010_sleeping_nodes: an enqueue notifies the nodes only when one of them sleeps (issue 30,
-- goal 1; docs/adr/0019-notify-only-a-sleeping-node.md).
--
-- Why. Until now every enqueuing transaction sent `NOTIFY bulkhead_jobs`. At COMMIT PostgreSQL
-- takes one lock for the whole database before it queues a notification, and holds it until
-- the commit is flushed: every notifying commit waited for the one before it, fsync included,
-- and group commit was lost. With durability on, 16 clients enqueuing one delivery per
-- transaction committed 1,780 transactions/s against 3,100 without the NOTIFY and 14,833 for a
-- plain insert (load/enqueue_bench.sh commit). The application's own commits queued behind it.
--
-- A node that is busy does not need the notification: it claims again as soon as it has room.
-- Only a runner that found its queue empty and waits needs one. Now:
--
--   * bulkhead.sleepers lists the runners that wait for news, one row per (queue, node). A
--     runner writes its row when it finds nothing to claim, claims once more (what committed
--     before the row did, it takes itself), and deletes the row when a claim takes work again.
--     The table is UNLOGGED: its rows are a hint, written and deleted without WAL or fsync, and
--     gone after a crash, when every node reconnects and writes its row again.
--   * The trigger jobs_wake_sleepers looks at bulkhead.sleepers at COMMIT (a deferred
--     constraint trigger), once per queue per transaction, and notifies only if a runner of
--     the queue waits. Looking at COMMIT, not at the enqueue, matters: a runner that starts to
--     wait while the application's transaction is still open is seen.
--   * The enqueue functions no longer call bulkhead.wake(), which is gone.
--
-- What remains is a narrow race: a runner's row that commits between the trigger's look and the
-- end of the enqueuing commit (the time of its flush). The runner claims once more a moment
-- after writing its row (QueueRunner) and, past that, its fallback poll finds the job.

CREATE UNLOGGED TABLE bulkhead.sleepers (
  queue text        NOT NULL,
  node  text        NOT NULL,
  since timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (queue, node)
);
COMMENT ON TABLE bulkhead.sleepers IS
  'The runners that found their queue empty and wait for an enqueue''s notification, one row '
  'per (queue, node). Unlogged: a hint that a crash may empty, rewritten by the nodes.';
-- The trigger runs as the enqueuing role, whatever it is: which queues have a waiting runner is
-- no secret.
GRANT SELECT ON bulkhead.sleepers TO PUBLIC;
-- The nodes' roles write it. A role granted the node part before this migration (or the broad
-- grants of the old docs) has DELETE on bulkhead.jobs, which only the node part has: it gets
-- the table now, so that its nodes need no new `bulkhead grant` to be notified.
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
    EXECUTE format('GRANT INSERT, DELETE ON bulkhead.sleepers TO %s',
                   CASE WHEN grantee = 0 THEN 'PUBLIC' ELSE quote_ident(grantee::regrole::text) END);
  END LOOP;
END
$$;

-- Notifies the runners of NEW.queue at COMMIT if one of them waits, once per queue per
-- transaction. The flag bulkhead.woken.<queue> is transaction-local; set for a whole session
-- (SET bulkhead.woken.default = on) it turns the notification off, as before.
CREATE FUNCTION bulkhead.wake_sleepers() RETURNS trigger
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

-- Due jobs only: jobs due later and parked jobs are found by the nodes' own timers.
CREATE CONSTRAINT TRIGGER jobs_wake_sleepers AFTER INSERT ON bulkhead.jobs
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.state = 'available' AND NEW.scheduled_at <= now())
  EXECUTE FUNCTION bulkhead.wake_sleepers();

-- The enqueue functions as in 0001 and 0009, without the call to bulkhead.wake().
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

-- The single-row path applications call most. It shares route() and check_delivery() with
-- enqueue_many() but has its own INSERT: going through the arrays of enqueue_many() made
-- one enqueue 1.6x slower with one client and 2.2x slower with ten (load/enqueue_bench.sh).
CREATE OR REPLACE FUNCTION bulkhead.enqueue(channel_id bigint, payload jsonb,
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
DROP FUNCTION bulkhead.wake(text);

-- The node part of bulkhead.grant_role also writes bulkhead.sleepers. 0009's function stays, as
-- grant_role_0009, and grant_role adds what later migrations need.
ALTER FUNCTION bulkhead.grant_role(text, text) RENAME TO grant_role_0009;
CREATE FUNCTION bulkhead.grant_role(role_name text, part text) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM bulkhead.grant_role_0009(role_name, part);
  IF part = 'node' THEN
    EXECUTE format('GRANT INSERT, DELETE ON bulkhead.sleepers TO %s', quote_ident(role_name));
  END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION bulkhead.grant_role(text, text) FROM PUBLIC;
COMMENT ON FUNCTION bulkhead.grant_role(text, text) IS
  'Grants a role exactly what the part app, node or console needs (bulkhead grant).';
