-- Reverses 0026_enqueue_through_shared_checks: check_delivery() and check_ordering_key()
-- return void again (as migrations 0001 and 0013 made them), route() plans with the session's
-- enable_seqscan, and bulkhead.enqueue is 0024's, with the checks and the routing in its body.
DROP FUNCTION bulkhead.check_delivery(jsonb, text, integer, text);
CREATE FUNCTION bulkhead.check_delivery(payload jsonb, idempotency_key text,
                                         max_bytes integer, context text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  kind text := jsonb_typeof(payload);
  bytes integer;
BEGIN
  IF payload IS NULL THEN
    RAISE EXCEPTION '%payload is NULL', context USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF kind NOT IN ('object', 'array') THEN
    RAISE EXCEPTION '%payload must be a JSON object or array, not a %', context, kind
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  bytes := octet_length(payload::text);
  IF bytes > max_bytes THEN
    RAISE EXCEPTION '%payload is % bytes, over the limit of % bytes', context, bytes, max_bytes
      USING ERRCODE = 'program_limit_exceeded',
            HINT = 'The limit is the setting bulkhead.max_payload_bytes.';
  END IF;
  IF idempotency_key IS NOT NULL AND length(idempotency_key) NOT BETWEEN 1 AND 255 THEN
    RAISE EXCEPTION '%idempotency_key must be 1 to 255 characters, not %', context,
      length(idempotency_key) USING ERRCODE = 'invalid_parameter_value';
  END IF;
END
$$;

DROP FUNCTION bulkhead.check_ordering_key(text, text);
CREATE FUNCTION bulkhead.check_ordering_key(ordering_key text, context text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF ordering_key IS NOT NULL AND length(ordering_key) NOT BETWEEN 1 AND 255 THEN
    RAISE EXCEPTION '%ordering_key must be 1 to 255 characters, not %', context,
      length(ordering_key) USING ERRCODE = 'invalid_parameter_value';
  END IF;
END
$$;

REVOKE EXECUTE ON FUNCTION bulkhead.check_delivery(jsonb, text, integer, text),
  bulkhead.check_ordering_key(text, text) FROM PUBLIC;

ALTER FUNCTION bulkhead.route(bigint, text) RESET enable_seqscan;

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
