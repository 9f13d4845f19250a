-- 0017_claim_floor, reversed: no floor (every claim reads from the lowest id), and
-- bulkhead.grant_role as 0013 left it.
DROP FUNCTION bulkhead.grant_role(text, text);
ALTER FUNCTION bulkhead.grant_role_0013(text, text) RENAME TO grant_role;
DROP TABLE bulkhead.claim_floor;
