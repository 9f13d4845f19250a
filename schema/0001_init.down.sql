-- 0001_init, reversed. Leaves the schema `bulkhead` and its version table to the runner.
DROP FUNCTION bulkhead.enqueue_many(bigint[], jsonb[], text[], timestamptz[]);
DROP FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz);
DROP FUNCTION bulkhead.check_delivery(jsonb, text, integer, text);
DROP FUNCTION bulkhead.route(bigint, text);
DROP TYPE bulkhead.route;
DROP FUNCTION bulkhead.wake(text);
DROP FUNCTION bulkhead.max_payload_bytes();
DROP TABLE bulkhead.jobs;
DROP TABLE bulkhead.nodes;
DROP TABLE bulkhead.channels;
DROP FUNCTION bulkhead.new_secret();
DROP TABLE bulkhead.tenants;
DROP TABLE bulkhead.tiers;
