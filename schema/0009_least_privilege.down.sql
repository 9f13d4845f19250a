-- 0009_least_privilege, reversed: the enqueue functions run with the caller's rights again and
-- PUBLIC may execute them and their helpers, as CREATE FUNCTION left them; add_channel and grant_role are gone.
-- Privileges `bulkhead grant` gave roles on tables stay (reversing them could stop a running
-- application); an app role granted by it needs INSERT on bulkhead.jobs again to enqueue.
DROP FUNCTION bulkhead.grant_role(text, text);
DROP FUNCTION bulkhead.add_channel(bigint, text);
ALTER FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz)
  SECURITY INVOKER RESET search_path;
ALTER FUNCTION bulkhead.enqueue_many(bigint[], jsonb[], text[], timestamptz[])
  SECURITY INVOKER RESET search_path;
GRANT EXECUTE ON FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz),
  bulkhead.enqueue_many(bigint[], jsonb[], text[], timestamptz[]), bulkhead.route(bigint, text),
  bulkhead.wake(text), bulkhead.check_delivery(jsonb, text, integer, text) TO PUBLIC;
