-- Reverses 0024_enqueue_in_one_body: bulkhead.enqueue as migration 0019 left it, calling
-- check_delivery(), check_ordering_key() and route().
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
