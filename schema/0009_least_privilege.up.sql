-- 0009_least_privilege: each part of a deployment gets a role with exactly what it needs
-- (issue 31, Part C; docs/adr/0018-least-privilege-roles.md).
--
-- Until now the application's role needed SELECT, INSERT, UPDATE and DELETE on every table to
-- enqueue, because the enqueue functions ran with the caller's rights: any code in the
-- application, or an SQL injection in it, could read every channel's signing secret and rewrite
-- or delete deliveries. Now:
--
--   * bulkhead.enqueue and bulkhead.enqueue_many run as their owner (SECURITY DEFINER), so the
--     application needs EXECUTE on them and no privilege on bulkhead.jobs. Their search_path is
--     pinned to pg_catalog, then pg_temp (last, so that a temporary table or function of the
--     caller can never stand in for one of PostgreSQL's): every object of ours is written with
--     its schema.
--   * bulkhead.add_channel(tenant_id, url) adds a channel and returns its id and secret: the one
--     secret an application may read, the one it just created.
--   * bulkhead.grant_role(role, part) grants a role what the part `app`, `node` or `console`
--     needs and nothing else (`bulkhead grant` calls it).
--
-- Nothing changes for a deployment that runs on broad grants: every role that may insert into
-- bulkhead.jobs today is granted EXECUTE on the enqueue functions here, before PUBLIC loses it.

ALTER FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz)
  SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION bulkhead.enqueue_many(bigint[], jsonb[], text[], timestamptz[])
  SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

-- Keep the enqueue working for the roles that could insert jobs themselves (the broad grants of
-- docs/operations.md before this migration); PUBLIC keeps it only if PUBLIC could insert.
DO $$
DECLARE
  grantee oid;
BEGIN
  FOR grantee IN
    SELECT DISTINCT a.grantee
      FROM pg_class c, aclexplode(c.relacl) a
     WHERE c.oid = 'bulkhead.jobs'::regclass AND a.privilege_type = 'INSERT'
       AND a.grantee <> c.relowner
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz), '
                   'bulkhead.enqueue_many(bigint[], jsonb[], text[], timestamptz[]) TO %s',
                   CASE WHEN grantee = 0 THEN 'PUBLIC' ELSE quote_ident(grantee::regrole::text) END);
  END LOOP;
END
$$;
REVOKE EXECUTE ON FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz),
  bulkhead.enqueue_many(bigint[], jsonb[], text[], timestamptz[]) FROM PUBLIC;
-- The grant above gives PUBLIC back what it had, when it had INSERT on jobs: the REVOKE only
-- removes what CREATE FUNCTION gave it by default.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_class c, aclexplode(c.relacl) a
              WHERE c.oid = 'bulkhead.jobs'::regclass AND a.privilege_type = 'INSERT'
                AND a.grantee = 0) THEN
    GRANT EXECUTE ON FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz),
      bulkhead.enqueue_many(bigint[], jsonb[], text[], timestamptz[]) TO PUBLIC;
  END IF;
END
$$;

-- The enqueue functions' helpers run only inside them now, as the owner: nobody else needs to
-- call them (route() would read channels as the caller; wake() would notify the nodes without
-- a delivery). new_secret() stays callable: it is channels.secret's default, which an INSERT
-- evaluates as the inserting role.
REVOKE EXECUTE ON FUNCTION bulkhead.route(bigint, text), bulkhead.wake(text),
  bulkhead.check_delivery(jsonb, text, integer, text) FROM PUBLIC;

-- A new channel of tenant `tenant_id` at `url`, with a generated secret: its id and its secret,
-- which the application hands to the receiver. The errors are the table's own: an unknown
-- tenant 23503 (foreign_key_violation), a URL that is not http(s) 23514 (check_violation).
CREATE FUNCTION bulkhead.add_channel(tenant_id bigint, url text)
RETURNS TABLE (id bigint, secret text)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  INSERT INTO bulkhead.channels AS ch (tenant_id, url) VALUES (add_channel.tenant_id, add_channel.url)
  RETURNING ch.id, ch.secret
$$;
REVOKE EXECUTE ON FUNCTION bulkhead.add_channel(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION bulkhead.add_channel(bigint, text) IS
  'Adds a channel (an endpoint) to a tenant and returns its id and its generated signing secret.';

-- Grants `role_name` exactly what the part needs, after revoking whatever it held on the
-- schema's tables, sequences and functions (so a role that ran on the broad grants ends with
-- these alone). Idempotent. Runs with the caller's rights: only the schema's owner (the role
-- that ran `bulkhead migrate`) or a superuser may call it, and it says so otherwise.
--
--   app      enqueue, enqueue_many and add_channel; its tenants (add, read, rename) and its
--            channels (read and change the URL), never a secret column nor a job.
--   node     what delivery needs: claim, record, break and park, lead (rescue, prune, expire
--            old secrets), register its tiers and itself.
--   console  read everything but secrets, and the operator's actions on channels and jobs
--            (pause, resume, breaker reset, enable, replay, cancel).
--
-- Columns are listed from the catalog where the rule is "every column but the secret", so a
-- column a later migration adds is covered when `bulkhead grant` runs again after it.
CREATE FUNCTION bulkhead.grant_role(role_name text, part text) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  role_id oid;
  who text;
  readable_channel_columns text;
BEGIN
  IF part IS NULL OR part NOT IN ('app', 'node', 'console') THEN
    RAISE EXCEPTION 'bulkhead.grant_role: part must be app, node or console, not %',
      coalesce('"' || part || '"', 'NULL') USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT oid INTO role_id FROM pg_roles WHERE rolname = role_name;
  IF role_id IS NULL THEN
    RAISE EXCEPTION 'bulkhead.grant_role: no role named "%"', role_name
      USING ERRCODE = 'undefined_object', HINT = 'Create it first: CREATE ROLE ... LOGIN';
  END IF;
  IF NOT pg_has_role(current_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'bulkhead'),
                     'USAGE') THEN
    RAISE EXCEPTION 'bulkhead.grant_role: % does not own schema bulkhead', current_user
      USING ERRCODE = 'insufficient_privilege',
            HINT = 'Run it as the role that ran bulkhead migrate, or as a superuser.';
  END IF;
  IF role_id = (SELECT nspowner FROM pg_namespace WHERE nspname = 'bulkhead') THEN
    RAISE EXCEPTION 'bulkhead.grant_role: % owns schema bulkhead; give each part a role of its own',
      role_name USING ERRCODE = 'invalid_parameter_value';
  END IF;
  who := quote_ident(role_name);

  EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA bulkhead FROM %s', who);
  EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA bulkhead FROM %s', who);
  EXECUTE format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA bulkhead FROM %s', who);
  EXECUTE format('GRANT USAGE ON SCHEMA bulkhead TO %s', who);

  SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO readable_channel_columns
    FROM pg_attribute
   WHERE attrelid = 'bulkhead.channels'::regclass AND attnum > 0 AND NOT attisdropped
     AND attname <> 'secret';

  IF part = 'app' THEN
    EXECUTE format('GRANT EXECUTE ON FUNCTION '
                   'bulkhead.enqueue(bigint, jsonb, text, timestamptz), '
                   'bulkhead.enqueue_many(bigint[], jsonb[], text[], timestamptz[]), '
                   'bulkhead.add_channel(bigint, text) TO %s', who);
    EXECUTE format('GRANT SELECT (id, name, tier, created_at), INSERT (name, tier), UPDATE (name) '
                   'ON bulkhead.tenants TO %s', who);
    EXECUTE format('GRANT USAGE ON SEQUENCE bulkhead.tenants_id_seq TO %s', who);
    EXECUTE format('GRANT SELECT (%s), UPDATE (url) ON bulkhead.channels TO %s',
                   readable_channel_columns, who);
    EXECUTE format('GRANT SELECT ON bulkhead.tiers TO %s', who);
  ELSIF part = 'node' THEN
    EXECUTE format('GRANT SELECT, UPDATE, DELETE ON bulkhead.jobs TO %s', who);
    EXECUTE format('GRANT SELECT, UPDATE ON bulkhead.channels TO %s', who);
    EXECUTE format('GRANT SELECT, DELETE ON bulkhead.channel_secrets TO %s', who);
    EXECUTE format('GRANT SELECT ON bulkhead.tenants, bulkhead.migrations TO %s', who);
    EXECUTE format('GRANT SELECT, INSERT ON bulkhead.tiers TO %s', who);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON bulkhead.nodes TO %s', who);
  ELSE
    EXECUTE format('GRANT SELECT ON bulkhead.tenants, bulkhead.tiers, bulkhead.nodes, '
                   'bulkhead.migrations TO %s', who);
    EXECUTE format('GRANT SELECT (%s) ON bulkhead.channels TO %s', readable_channel_columns, who);
    EXECUTE format('GRANT UPDATE (paused, enabled, disabled_reason, breaker_state, '
                   'breaker_changed_at, breaker_probe_at, breaker_probe_job, breaker_trips, '
                   'breaker_reason) ON bulkhead.channels TO %s', who);
    EXECUTE format('GRANT SELECT (channel_id, retired_at, expires_at) '
                   'ON bulkhead.channel_secrets TO %s', who);
    EXECUTE format('GRANT SELECT, UPDATE ON bulkhead.jobs TO %s', who);
  END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION bulkhead.grant_role(text, text) FROM PUBLIC;
COMMENT ON FUNCTION bulkhead.grant_role(text, text) IS
  'Grants a role exactly what the part app, node or console needs (bulkhead grant).';
