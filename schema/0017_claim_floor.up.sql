-- 0017_claim_floor: the lowest id a job that can still be claimed may have, kept by the leader
-- and passed by every claim, so that on a jobs table in ranges of ids the claim's generic plan
-- leaves the aged ranges out when it starts (ADR 0027, which ADR 0026's migration waits for).
--
-- bulkhead.claim_floor holds one row:
--   floor_id         every job with a lower id is finished (completed, discarded, cancelled)
--                    and its transaction has ended: no claim needs to look below it
--   settled_below    every id below it was drawn by a transaction that has ended, so a snapshot
--                    taken now sees each such row as it will stay (or sees it was rolled back)
--   pending_below    the next candidate for settled_below: one above the highest id committed
--                    when it was read
--   pending_lockers  the transactions (virtual ids, pg_locks) that held a ROW EXCLUSIVE lock on
--                    bulkhead.jobs right after pending_below was read: pending_below settles
--                    once none of them is left
--   generation       bumped by every replay, the one change that makes a finished job claimable
--                    again: a floor computed from a snapshot taken before a replay is not stored
--   advanced_at      when the leader last moved the floor
--
-- Why the lockers. Ids are drawn in order, but commit in any order: an application transaction
-- that enqueued id 100 and has not committed is invisible while the rows around it finish. Any
-- transaction that draws an id holds a ROW EXCLUSIVE lock on bulkhead.jobs (its INSERT took it
-- before the id's default ran) until it ends, so once every transaction that held one when the
-- highest committed id was read has ended, no id below it is still being written.
--
-- The floor only matters to how much a claim reads: a floor too low costs time, never a job.
-- So the claim reads it with every call (a one-row table) and the node passes the last one it
-- read; a replay lowers it in its own statement.
CREATE TABLE bulkhead.claim_floor (
  one             boolean     PRIMARY KEY DEFAULT true,
  floor_id        bigint      NOT NULL DEFAULT 0,
  settled_below   bigint      NOT NULL DEFAULT 0,
  pending_below   bigint,
  pending_lockers text[]      NOT NULL DEFAULT '{}',
  generation      bigint      NOT NULL DEFAULT 0,
  advanced_at     timestamptz,
  CONSTRAINT claim_floor_one_row CHECK (one),
  CONSTRAINT claim_floor_below_settled CHECK (floor_id <= settled_below)
);
INSERT INTO bulkhead.claim_floor DEFAULT VALUES;
COMMENT ON TABLE bulkhead.claim_floor IS
  'The lowest id a claimable job may have (migration 0017, ADR 0027). One row; the leader '
  'raises it, a replay lowers it.';
GRANT SELECT ON bulkhead.claim_floor TO PUBLIC;

-- The node part raises the floor (its leader); the console part lowers it (its replay).
ALTER FUNCTION bulkhead.grant_role(text, text) RENAME TO grant_role_0013;
CREATE FUNCTION bulkhead.grant_role(role_name text, part text) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM bulkhead.grant_role_0013(role_name, part);
  IF part IN ('node', 'console') THEN
    EXECUTE format('GRANT UPDATE ON bulkhead.claim_floor TO %s', quote_ident(role_name));
  END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION bulkhead.grant_role(text, text) FROM PUBLIC;
COMMENT ON FUNCTION bulkhead.grant_role(text, text) IS
  'Grants a role exactly what the part app, node or console needs (bulkhead grant).';

-- Roles granted before this migration keep working without a new `bulkhead grant`: whoever may
-- update bulkhead.jobs (the node and console parts) may update the floor.
DO $$
DECLARE
  grantee oid;
BEGIN
  FOR grantee IN
    SELECT DISTINCT a.grantee
      FROM pg_class c, aclexplode(c.relacl) a
     WHERE c.oid = 'bulkhead.jobs'::regclass AND a.privilege_type = 'UPDATE'
       AND a.grantee <> c.relowner
  LOOP
    EXECUTE format('GRANT UPDATE ON bulkhead.claim_floor TO %s',
                   CASE WHEN grantee = 0 THEN 'PUBLIC' ELSE quote_ident(grantee::regrole::text) END);
  END LOOP;
END
$$;
