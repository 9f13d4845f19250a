-- 0004_secrets, reversed. The old secrets are dropped with their table: after a down, each
-- channel signs with its current secret only.
DROP INDEX bulkhead.channels_old_secrets_until;
ALTER TABLE bulkhead.channels DROP COLUMN old_secrets_until;
DROP TABLE bulkhead.channel_secrets;
