-- 0006_claim_index_apart, reversed: jobs_claim holds the available jobs again under 0001's
-- predicate, which the per-channel steps may read again (built anew under the lock).
DROP INDEX bulkhead.jobs_claim;
CREATE INDEX jobs_claim ON bulkhead.jobs (queue, priority, scheduled_at, id)
  WHERE state = 'available';
