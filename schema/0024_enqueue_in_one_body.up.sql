-- 0024_enqueue_in_one_body: bulkhead.enqueue checks and routes in its own body (issue 30,
-- goals 1 and 2).
--
-- One enqueue is one INSERT for the application, and everything around that INSERT is
-- PostgreSQL CPU spent inside the application's transaction. Since 0001 the function called
-- four functions for it: check_delivery and check_ordering_key (each a PERFORM, that is a
-- SELECT run through the executor), max_payload_bytes inside the first, and route(), itself a
-- plpgsql function around one SELECT. Each call is a statement started and ended, and a
-- plpgsql frame set up, for conditions that are one comparison each.
--
-- The body now tests the same conditions itself, as plpgsql expressions (evaluated without
-- the executor), and runs route()'s SELECT once. The messages, SQLSTATEs and HINTs are
-- route()'s and check_delivery()'s, word for word, and so is their order: the setting
-- bulkhead.max_payload_bytes first (a bad setting is reported before any argument), then the
-- payload, the idempotency key, the ordering key, the channel. max_payload_bytes() still reads
-- and checks the setting whenever it is set; an unset one is the default without a call.
--
-- enqueue_many and publish keep calling the shared functions: they run them once a call (the
-- route once a channel), and their rows are many.
CREATE OR REPLACE FUNCTION bulkhead.enqueue(channel_id bigint, payload jsonb,
                                 idempotency_key text DEFAULT NULL,
                                 scheduled_at timestamptz DEFAULT now(),
                                 ordering_key text DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  context constant text := 'bulkhead.enqueue: ';
  due timestamptz := coalesce(enqueue.scheduled_at, now());
  setting text := current_setting('bulkhead.max_payload_bytes', true);
  max_bytes integer;
  kind text;
  bytes integer;
  c record;
  r bulkhead.route;
  job_id bigint;
  holder bigint;
BEGIN
  -- check_delivery(), with max_payload_bytes() as its argument.
  IF setting IS NULL OR setting = '' THEN
    max_bytes := 262144;
  ELSE
    max_bytes := bulkhead.max_payload_bytes();
  END IF;
  IF enqueue.payload IS NULL THEN
    RAISE EXCEPTION '%payload is NULL', context USING ERRCODE = 'null_value_not_allowed';
  END IF;
  kind := jsonb_typeof(enqueue.payload);
  IF kind NOT IN ('object', 'array') THEN
    RAISE EXCEPTION '%payload must be a JSON object or array, not a %', context, kind
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  bytes := octet_length(enqueue.payload::text);
  IF bytes > max_bytes THEN
    RAISE EXCEPTION '%payload is % bytes, over the limit of % bytes', context, bytes, max_bytes
      USING ERRCODE = 'program_limit_exceeded',
            HINT = 'The limit is the setting bulkhead.max_payload_bytes.';
  END IF;
  IF enqueue.idempotency_key IS NOT NULL
     AND length(enqueue.idempotency_key) NOT BETWEEN 1 AND 255 THEN
    RAISE EXCEPTION '%idempotency_key must be 1 to 255 characters, not %', context,
      length(enqueue.idempotency_key) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- check_ordering_key().
  IF enqueue.ordering_key IS NOT NULL AND length(enqueue.ordering_key) NOT BETWEEN 1 AND 255 THEN
    RAISE EXCEPTION '%ordering_key must be 1 to 255 characters, not %', context,
      length(enqueue.ordering_key) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- route() as migration 0002 left it.
  IF enqueue.channel_id IS NULL THEN
    RAISE EXCEPTION '%channel_id is NULL', context USING ERRCODE = 'null_value_not_allowed';
  END IF;
  SELECT ch.enabled, ch.disabled_reason, ch.breaker_state, ch.paused, t.id AS tenant_id, t.tier
    INTO c
    FROM bulkhead.channels ch JOIN bulkhead.tenants t ON t.id = ch.tenant_id
   WHERE ch.id = enqueue.channel_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION '%no channel with id %', context, enqueue.channel_id
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  IF NOT c.enabled THEN
    RAISE EXCEPTION '%channel % is disabled: %', context, enqueue.channel_id, c.disabled_reason
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'An operator re-enables it with: bulkhead channel enable '
                   || enqueue.channel_id;
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
