-- 0011_enqueue_arbiter_for_keys_only, reversed: bulkhead.enqueue inserts through ON CONFLICT
-- whether or not the delivery has a key, as in 0010.

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

