-- The completion store's statement: what the completion writer runs (worker/store/completion_store.h).
-- Format: see claim_store.sql.

-- name: Record
-- Writes the results $1 of jobs node $2 still owns at their attempt; stale ones change nothing.
-- param $1 results jsonb
-- param $2 node text
-- One statement for a whole batch of results.
--
-- The WHERE is the fence: a node finishes a job only while it is still `executing`, claimed by
-- this node, at this attempt. A result that arrives after a hand-back, a rescue or another
-- claim matches nothing and changes nothing.
--
-- Whether a failure retries or discards is decided here, from the row's own attempt and
-- max_attempts, not from what the node remembers; a permanent failure (the SSRF guard refused
-- the endpoint's address) is discarded whatever attempts remain, since no retry can mend it. The
-- retry time is the database's now() plus the node's jittered delay, so clocks of different nodes
-- never disagree about it. A failed attempt whose channel's breaker is no longer closed (or that
-- was paused meanwhile) waits parked rather than available: attempts in flight when a breaker opens
-- end as usual, and their jobs join the parked backlog without spending more of their budget. A
-- retry goes to the queue of the tenant's tier now: a tenant moved by set-tier while this attempt
-- ran retries in its new tier. The attempt log keeps the newest 20 failed attempts (jsonb - 0
-- drops the oldest); the attempt that delivers is kept in delivered_status and delivered_ms.
UPDATE bulkhead.job_rows AS j
   SET state = CASE WHEN r.delivered THEN 'completed'
                    WHEN j.attempt >= j.max_attempts OR r.permanent THEN 'discarded'
                    WHEN NOT {{flowing}} THEN 'parked'
                    ELSE 'available' END,
       priority = CASE WHEN NOT r.delivered AND NOT r.permanent AND j.attempt < j.max_attempts
                            AND NOT {{flowing}} THEN 3
                       ELSE j.priority END,
       queue = CASE WHEN NOT r.delivered AND NOT r.permanent AND j.attempt < j.max_attempts
                    THEN t.tier
                    ELSE j.queue END,
       finished_at = CASE WHEN r.delivered OR r.permanent OR j.attempt >= j.max_attempts
                          THEN now() END,
       scheduled_at = CASE WHEN NOT r.delivered AND NOT r.permanent AND j.attempt < j.max_attempts
                           THEN now() + r.retry_delay_ms * interval '1 millisecond'
                           ELSE j.scheduled_at END,
       last_error = CASE WHEN r.delivered THEN j.last_error ELSE r.error END,
       -- The delivering attempt goes into two columns, the others into the log (migration
       -- 0016): an entry repeated attempt, attempted_at and attempted_by, and cost every
       -- delivery about 150 WAL bytes in this write and more in the prune.
       delivered_status = CASE WHEN r.delivered THEN nullif(r.status, 0) END,
       delivered_ms = CASE WHEN r.delivered THEN round(r.duration_ms::numeric, 1) END,
       attempts = CASE WHEN r.delivered THEN j.attempts
                       ELSE CASE WHEN jsonb_array_length(j.attempts) >= 20 THEN j.attempts - 0
                                 ELSE j.attempts END
                            || jsonb_build_array({{attempt_entry(j, r.duration_ms,
                                                                 nullif(r.status, 0),
                                                                 nullif(r.error, ''))}})
                  END
  FROM jsonb_to_recordset($1::jsonb) AS r(id bigint, attempt smallint, delivered boolean,
                                          status integer, error text, duration_ms float8,
                                          retry_delay_ms bigint, permanent boolean),
       bulkhead.channels AS ch, bulkhead.tenants AS t
 WHERE j.id = r.id AND j.state = 'executing' AND j.attempted_by = $2 AND j.attempt = r.attempt
   AND ch.id = j.channel_id AND t.id = j.tenant_id
