-- 0012_console, reversed: no audit log, no breaker history, no jobs_discarded, and
-- bulkhead.grant_role as 0010 left it.
DROP FUNCTION bulkhead.grant_role(text, text);
ALTER FUNCTION bulkhead.grant_role_0010(text, text) RENAME TO grant_role;

DROP INDEX bulkhead.jobs_discarded;
DROP TRIGGER channels_breaker_history ON bulkhead.channels;
DROP FUNCTION bulkhead.record_breaker_event();
DROP TABLE bulkhead.breaker_events;
DROP TABLE bulkhead.console_actions;
