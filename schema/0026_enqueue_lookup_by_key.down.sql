-- Reverses 0026_enqueue_lookup_by_key: the enqueue's lookups are planned with the session's
-- enable_seqscan.
ALTER FUNCTION bulkhead.enqueue(bigint, jsonb, text, timestamptz, text) RESET enable_seqscan;
ALTER FUNCTION bulkhead.route(bigint, text) RESET enable_seqscan;
