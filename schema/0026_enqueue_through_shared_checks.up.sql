-- 0026_enqueue_through_shared_checks: bulkhead.enqueue calls the shared checks and route()
-- again, each as an expression, and route() finds its channel through the primary keys
-- (issue 30, goals 1 and 2).
--
-- Migration 0024 wrote the checks and the routing into enqueue's own body, because each call
-- cost a statement: the checks were run with PERFORM, that is as a SELECT started and ended
-- through the executor. That saved about 5 % of an enqueue and wrote route()'s and
-- check_delivery()'s conditions twice. What the call cost was the PERFORM, not the function:
-- a call assigned to a variable is a plpgsql expression, evaluated without the executor.
-- check_delivery() and check_ordering_key() returned void, which cannot be assigned, so they
-- now return true (or raise, as before), and enqueue assigns all three calls. The messages,
-- SQLSTATEs, HINTs and the order of refusals are the functions' own again.
--
-- route()'s SELECT joins one channel to its tenant. With a few hundred tenants or fewer the
-- two tables are a page or two each, and the plan plpgsql keeps for it (the generic plan,
-- from the sixth call of a session) is a hash join over a sequential scan of both: every
-- enqueue read both tables, built a hash table and asked the kernel for both files' sizes.
-- With enable_seqscan off for route() it probes channels_pkey and tenants_pkey, as the plan
-- for a large table already does. Measured with a COMMIT after each enqueue (100 channels,
-- 2026-12-06): about 10 µs of an enqueue's 100. enqueue_many and publish call route() too.
--
-- The functions are dropped and created again, since a function's result type cannot be
-- replaced; nothing depends on them in pg_depend (plpgsql bodies name functions only by
-- text), and they are the owner's only, as since migrations 0009 and 0013.
DROP FUNCTION bulkhead.check_delivery(jsonb, text, integer, text);
CREATE FUNCTION bulkhead.check_delivery(payload jsonb, idempotency_key text,
                                        max_bytes integer, context text) RETURNS boolean
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
  RETURN true;
END
$$;
COMMENT ON FUNCTION bulkhead.check_delivery(jsonb, text, integer, text) IS
  'Raises the error for an unusable payload or idempotency key, or returns true (migration 0026).';

DROP FUNCTION bulkhead.check_ordering_key(text, text);
CREATE FUNCTION bulkhead.check_ordering_key(ordering_key text, context text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF ordering_key IS NOT NULL AND length(ordering_key) NOT BETWEEN 1 AND 255 THEN
    RAISE EXCEPTION '%ordering_key must be 1 to 255 characters, not %', context,
      length(ordering_key) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN true;
END
$$;
COMMENT ON FUNCTION bulkhead.check_ordering_key(text, text) IS
  'Raises the error for an unusable ordering key, or returns true (migration 0026).';

REVOKE EXECUTE ON FUNCTION bulkhead.check_delivery(jsonb, text, integer, text),
  bulkhead.check_ordering_key(text, text) FROM PUBLIC;

ALTER FUNCTION bulkhead.route(bigint, text) SET enable_seqscan = off;

-- As 0019 left it, with the calls assigned instead of performed, and the ordering key's check
-- called only for a key (most enqueues have none).
CREATE OR REPLACE FUNCTION bulkhead.enqueue(channel_id bigint, payload jsonb,
                                 idempotency_key text DEFAULT NULL,
                                 scheduled_at timestamptz DEFAULT now(),
                                 ordering_key text DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  context constant text := 'bulkhead.enqueue: ';
  due timestamptz := coalesce(enqueue.scheduled_at, now());
  checked boolean;
  r bulkhead.route;
  job_id bigint;
  holder bigint;
BEGIN
  checked := bulkhead.check_delivery(enqueue.payload, enqueue.idempotency_key,
                                     bulkhead.max_payload_bytes(), context);
  IF enqueue.ordering_key IS NOT NULL THEN
    checked := bulkhead.check_ordering_key(enqueue.ordering_key, context);
  END IF;
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
