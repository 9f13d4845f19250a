-- The role store's statements: what `bulkhead grant` runs (worker/store/role_store.h).
-- Format: see claim_store.sql. Each runs once per command (a custom plan).

-- name: GrantRole
-- Grants role $1 exactly what part $2 (app, node or console) needs, revoking what it held before.
-- param $1 role text
-- param $2 part text
-- column grant_role void
-- The lists live in the schema (bulkhead.grant_role, migration 0009), versioned with the tables
-- they name; its errors carry their SQLSTATE: 42704 no such role, 22023 an unknown part or the
-- schema's own owner, 42501 a caller that does not own the schema.
SELECT bulkhead.grant_role($1, $2)

-- name: RolePrivileges
-- What role $1 may do in schema bulkhead now: one row per object, its privileges.
-- param $1 role name
-- column object text
-- column privileges text
-- Table privileges come from each table's ACL (a partitioned table's too: jobs since migration
-- 0021), column privileges from each column's, and function privileges from each function's,
-- all for the role itself (not its memberships); a column privilege reads "SELECT (id, name)".
-- Names are cast to text: a `name` holds 63 bytes, fewer than some functions take with their
-- argument types.
WITH role AS (
  SELECT oid FROM pg_roles WHERE rolname = $1
), schema AS (
  SELECT oid FROM pg_namespace WHERE nspname = 'bulkhead'
), granted AS (
  SELECT c.relname::text AS object, a.privilege_type AS privilege, NULL::text AS col, 0 AS attnum
    FROM pg_class c, schema, role, aclexplode(c.relacl) a
   WHERE c.relnamespace = schema.oid AND c.relkind IN ('r', 'p', 'v', 'S') AND a.grantee = role.oid
  UNION ALL
  SELECT c.relname::text, a.privilege_type, att.attname::text, att.attnum
    FROM pg_class c JOIN pg_attribute att ON att.attrelid = c.oid, schema, role,
         aclexplode(att.attacl) a
   WHERE c.relnamespace = schema.oid AND c.relkind IN ('r', 'p') AND a.grantee = role.oid
  UNION ALL
  SELECT p.oid::regprocedure::text, a.privilege_type, NULL, 0
    FROM pg_proc p, schema, role, aclexplode(p.proacl) a
   WHERE p.pronamespace = schema.oid AND a.grantee = role.oid
), per_privilege AS (
  SELECT object, privilege,
         CASE WHEN bool_or(col IS NULL) THEN privilege
              ELSE privilege || ' (' || string_agg(col, ', ' ORDER BY attnum) || ')' END AS text
    FROM granted
   GROUP BY object, privilege
)
SELECT replace(object, 'bulkhead.', '') AS object,
       string_agg(text, ', ' ORDER BY privilege) AS privileges
  FROM per_privilege
 GROUP BY object
 ORDER BY object
