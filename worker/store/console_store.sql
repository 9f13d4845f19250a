-- The console store's statements: what `bulkhead console` reads (worker/store/console_store.h,
-- docs/console.md). Format: see claim_store.sql.
--
-- The console answers every page within 100 ms beside 10 million jobs, so no statement here
-- counts or walks more than a bound it is given: a backlog is counted up to $cap + 1 rows of a
-- partial index (the page says "100,000+"), a list walks at most $examine rows of the index its
-- filter names, and anything else is filtered after that walk. Each answer is built as one JSON
-- document by the server, which the console passes on as it is. The console's connections plan
-- every statement with its parameters (plan_cache_mode = force_custom_plan), so the
-- `$n IS NULL OR …` filters fold away before planning.

-- name: Overview
-- The overview page: per tier its depth by state and lag; nodes, their leases and the leader;
-- the channels that do not flow.
-- param $1 cap integer: a tier's counts stop one past this
-- param $2 breaker_cap integer: a broken channel's parked count stops one past this
-- column body jsonb
-- Per tier, each count reads one range of a partial index of unfinished rows, at most $1 + 1
-- entries: due and later available jobs per priority in jobs_claim, executing jobs in
-- jobs_executing, parked jobs in jobs_parked (by channel, then summed by the channel's tier).
-- The 25 channels broken longest are listed, each with its parked jobs counted to $2 + 1, and
-- all broken channels counted (one pass over channels). The page is polled every 2 s by every
-- open browser, so its caps are lower than the other pages' (and the console caches it, 1 s).
-- The leader is the node whose maintenance connection holds the fleet's advisory lock
-- (fleet_store.sql, Lead), found by the tag that connection names itself with.
WITH tier_counts AS MATERIALIZED (  -- each count once, though several fields read it
  SELECT q.name AS queue,
         (SELECT count(*) FROM (
            SELECT 1 FROM generate_series(1, 3) AS p(priority)
             CROSS JOIN LATERAL (
                   SELECT 1 FROM bulkhead.jobs j
                    WHERE j.queue = q.name AND j.state = 'available' AND j.priority = p.priority
                      AND j.priority BETWEEN 1 AND 3 AND j.scheduled_at <= now()
                    LIMIT $1 + 1) AS r
             LIMIT $1 + 1) AS c) AS available,
         (SELECT count(*) FROM (
            SELECT 1 FROM generate_series(1, 3) AS p(priority)
             CROSS JOIN LATERAL (
                   SELECT 1 FROM bulkhead.jobs j
                    WHERE j.queue = q.name AND j.state = 'available' AND j.priority = p.priority
                      AND j.priority BETWEEN 1 AND 3 AND j.scheduled_at > now()
                    LIMIT $1 + 1) AS r
             LIMIT $1 + 1) AS c) AS scheduled,
         (SELECT count(*) FROM bulkhead.jobs j
           WHERE j.state = 'executing' AND j.queue = q.name) AS executing,
         {{queue_lag_s(q.name)}} AS lag_s
    FROM bulkhead.tiers q
), parked_sample AS (
  SELECT j.channel_id FROM bulkhead.jobs j WHERE j.state = 'parked' LIMIT $1 + 1
), parked AS (  -- grouped by channel first, so that only those channels are looked up
  SELECT tier.name AS queue, sum(p.n)::bigint AS n
    FROM (SELECT channel_id, count(*) AS n FROM parked_sample GROUP BY channel_id) AS p
   CROSS JOIN LATERAL (SELECT t.tier AS name FROM bulkhead.channels ch
                         JOIN bulkhead.tenants t ON t.id = ch.tenant_id
                        WHERE ch.id = p.channel_id
                        LIMIT 1) AS tier  -- LIMIT: looked up by key, never joined whole
   GROUP BY tier.name
), leader AS (
  SELECT n.name FROM pg_locks l
    JOIN pg_stat_activity a ON a.pid = l.pid
    JOIN bulkhead.nodes n ON left(a.application_name, 38) = left({{leader_tag(n.name)}}, 38)
   WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
     AND (l.classid::bigint << 32 | l.objid::bigint) = 7094703853087728997
   LIMIT 1
), broken AS (
  SELECT ch.id, t.name AS tenant, t.tier, ch.breaker_state, ch.paused, ch.breaker_changed_at,
         ch.breaker_trips, ch.breaker_reason, ch.breaker_probe_at
    FROM bulkhead.channels ch JOIN bulkhead.tenants t ON t.id = ch.tenant_id
   WHERE NOT {{flowing}}
   ORDER BY ch.breaker_state = 'closed', ch.breaker_changed_at, ch.id
   LIMIT 25
)
SELECT jsonb_build_object(
  'tiers', coalesce((
    SELECT jsonb_agg(jsonb_build_object(
             'queue', c.queue,
             'available', least(c.available, $1), 'scheduled', least(c.scheduled, $1),
             'executing', c.executing, 'parked', least(coalesce(p.n, 0), $1),
             'capped', c.available > $1 OR c.scheduled > $1
                       OR (SELECT count(*) FROM parked_sample) > $1,
             'available_capped', c.available > $1, 'scheduled_capped', c.scheduled > $1,
             'parked_capped', (SELECT count(*) FROM parked_sample) > $1,
             'lag_s', c.lag_s) ORDER BY c.queue)
      FROM tier_counts c LEFT JOIN parked p ON p.queue = c.queue), '[]'),
  'nodes', coalesce((
    SELECT jsonb_agg(jsonb_build_object(
             'name', n.name, 'host', coalesce(n.host, ''), 'version', coalesce(n.version, ''),
             'tiers', array_to_string(n.tiers, ','),
             'heartbeat_age_s', extract(epoch FROM now() - n.heartbeat_at)::float8,
             'lease_left_s', extract(epoch FROM n.lease_until - now())::float8,
             'executing', (SELECT count(*) FROM bulkhead.jobs j
                            WHERE j.state = 'executing' AND j.attempted_by = n.name),
             'leader', n.name IN (SELECT name FROM leader)) ORDER BY n.name)
      FROM bulkhead.nodes n), '[]'),
  'breakers', coalesce((
    SELECT jsonb_agg(jsonb_build_object(
             'channel', b.id, 'tenant', b.tenant, 'tier', b.tier, 'state', b.breaker_state,
             'paused', b.paused, 'since', {{utc(b.breaker_changed_at)}},
             'since_s', extract(epoch FROM now() - b.breaker_changed_at)::float8,
             'trips', b.breaker_trips, 'reason', coalesce(b.breaker_reason, ''),
             'probe_in_s', coalesce(extract(epoch FROM b.breaker_probe_at - now())::float8, 0),
             'parked', least(b.parked, $2), 'parked_capped', b.parked > $2))
      FROM (SELECT b.*, (SELECT count(*) FROM (
                           SELECT 1 FROM bulkhead.jobs j
                            WHERE j.channel_id = b.id AND j.state = 'parked'
                            LIMIT $2 + 1) AS c) AS parked
              FROM broken b) AS b), '[]'),
  'broken_channels', (SELECT count(*) FROM bulkhead.channels ch WHERE NOT {{flowing}}),
  'sampled_at', {{utc(now())}}) AS body

-- name: ChannelList
-- Channels after id $2 matching $1, by id, at most $3, with their backlogs counted to $4.
-- param $1 query text?: NULL, every channel
-- param $2 after bigint
-- param $3 limit bigint
-- param $4 cap integer
-- column body jsonb
-- A query of digits matches a channel's or its tenant's id; any query matches the tenant's name
-- or the URL as a case-insensitive substring (strpos: no pattern characters to escape). The
-- channels are walked by the primary key from $2 on. Each listed channel's backlog is counted in
-- its ranges of jobs_channel_available and jobs_parked, at most $4 + 1 entries each; its jobs
-- in flight are counted once for all of them from jobs_executing, whose size is the fleet's
-- workers.
WITH listed AS (
  SELECT ch.id, ch.tenant_id, t.name AS tenant, t.tier, ch.url, ch.enabled, ch.paused,
         ch.breaker_state
    FROM bulkhead.channels ch JOIN bulkhead.tenants t ON t.id = ch.tenant_id
   WHERE ch.id > $2
     AND ($1::text IS NULL
          OR ch.id = CASE WHEN $1 ~ '^[0-9]{1,18}$' THEN $1::bigint END
          OR ch.tenant_id = CASE WHEN $1 ~ '^[0-9]{1,18}$' THEN $1::bigint END
          OR strpos(lower(t.name), lower($1)) > 0
          OR strpos(lower(ch.url), lower($1)) > 0)
   ORDER BY ch.id
   LIMIT $3
), flying AS (
  SELECT j.channel_id, count(*) AS n FROM bulkhead.jobs j
   WHERE j.state = 'executing' GROUP BY j.channel_id
), counted AS (
  SELECT l.*,
         (SELECT count(*) FROM (SELECT 1 FROM bulkhead.jobs j
                                 WHERE j.channel_id = l.id AND j.state = 'available'
                                 LIMIT $4 + 1) AS c) AS available,
         (SELECT count(*) FROM (SELECT 1 FROM bulkhead.jobs j
                                 WHERE j.channel_id = l.id AND j.state = 'parked'
                                 LIMIT $4 + 1) AS c) AS parked
    FROM listed l
)
SELECT coalesce(jsonb_agg(jsonb_build_object(
         'id', c.id, 'tenant', c.tenant, 'tenant_id', c.tenant_id, 'tier', c.tier, 'url', c.url,
         'enabled', c.enabled, 'paused', c.paused, 'breaker_state', c.breaker_state,
         'available', least(c.available, $4), 'executing', coalesce(f.n, 0),
         'parked', least(c.parked, $4), 'capped', c.available > $4 OR c.parked > $4)
         ORDER BY c.id), '[]') AS body
  FROM counted c LEFT JOIN flying f ON f.channel_id = c.id

-- name: ChannelDetail
-- Channel $1 (never its secret): breaker and its history, backlog counted to $2, in flight by
-- node, last errors; no row when there is no such channel.
-- param $1 channel bigint
-- param $2 cap integer
-- column body jsonb
-- Every part reads the channel's own ranges: jobs_channel_available and jobs_parked (counted to
-- $2 + 1), jobs_executing (the fleet's in-flight rows), breaker_events (its newest 20), and for
-- the last errors the first 200 waiting jobs that have failed once and its newest discarded
-- ones (jobs_discarded). A 410 Gone leaves its mark in disabled_reason (DisableGone); a 429's
-- Retry-After moves every waiting job of the channel to later (SnoozeChannel), so the channel
-- is held until its earliest available job is due.
WITH ch AS (  -- every column it shows, by name: the console's role may not read the secret
  SELECT ch.id, ch.tenant_id, ch.url, ch.created_at, ch.enabled, ch.paused, ch.disabled_reason,
         ch.breaker_state, ch.breaker_reason, ch.breaker_trips, ch.breaker_changed_at,
         ch.breaker_probe_at, ch.breaker_probe_job, t.name AS tenant, t.tier
    FROM bulkhead.channels ch JOIN bulkhead.tenants t ON t.id = ch.tenant_id
   WHERE ch.id = $1
), backlog AS (
  SELECT (SELECT count(*) FROM (SELECT 1 FROM bulkhead.jobs j
                                 WHERE j.channel_id = $1 AND j.state = 'available'
                                   AND j.scheduled_at <= now() LIMIT $2 + 1) AS c) AS available,
         (SELECT count(*) FROM (SELECT 1 FROM bulkhead.jobs j
                                 WHERE j.channel_id = $1 AND j.state = 'available'
                                   AND j.scheduled_at > now() LIMIT $2 + 1) AS c) AS scheduled,
         (SELECT count(*) FROM (SELECT 1 FROM bulkhead.jobs j
                                 WHERE j.channel_id = $1 AND j.state = 'parked'
                                 LIMIT $2 + 1) AS c) AS parked,
         (SELECT min(first.scheduled_at) FROM generate_series(1, 3) AS p(priority)
           CROSS JOIN LATERAL (SELECT j.scheduled_at FROM bulkhead.jobs j
                                WHERE j.channel_id = $1 AND j.state = 'available'
                                  AND j.priority = p.priority
                                ORDER BY j.scheduled_at LIMIT 1) AS first) AS next_due
), flying AS (
  SELECT j.attempted_by AS node, count(*) AS n FROM bulkhead.jobs j
   WHERE j.state = 'executing' AND j.channel_id = $1 GROUP BY j.attempted_by
), errors AS (
  (SELECT j.id, j.attempted_at, j.attempt, j.last_error FROM bulkhead.jobs j
    WHERE j.channel_id = $1 AND j.state = 'discarded'
    ORDER BY j.finished_at DESC LIMIT 10)
  UNION ALL
  (SELECT w.id, w.attempted_at, w.attempt, w.last_error
     FROM (SELECT j.id, j.attempted_at, j.attempt, j.last_error FROM bulkhead.jobs j
            WHERE j.channel_id = $1 AND j.state = 'available' LIMIT 200) AS w
    WHERE w.last_error IS NOT NULL)
), history AS (
  SELECT e.* FROM bulkhead.breaker_events e WHERE e.channel_id = $1 ORDER BY e.id DESC LIMIT 20
)
SELECT jsonb_build_object(
  'id', ch.id, 'tenant', ch.tenant, 'tenant_id', ch.tenant_id, 'tier', ch.tier, 'url', ch.url,
  'created_at', {{utc(ch.created_at)}}, 'enabled', ch.enabled, 'paused', ch.paused,
  'disabled_reason', coalesce(ch.disabled_reason, ''),
  'breaker', jsonb_build_object(
    'state', ch.breaker_state, 'reason', coalesce(ch.breaker_reason, ''),
    'trips', ch.breaker_trips, 'since', {{utc(ch.breaker_changed_at)}},
    'probe_in_s', coalesce(extract(epoch FROM ch.breaker_probe_at - now())::float8, 0),
    'probe_job', coalesce(ch.breaker_probe_job, 0),
    'history', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                  'at', {{utc(h.at)}}, 'from', h.from_state, 'to', h.to_state,
                                  'reason', coalesce(h.reason, '')) ORDER BY h.id DESC)
                           FROM history h), '[]')),
  'available', least(b.available, $2), 'scheduled', least(b.scheduled, $2),
  'executing', coalesce((SELECT sum(n) FROM flying), 0), 'parked', least(b.parked, $2),
  'capped', b.available > $2 OR b.scheduled > $2 OR b.parked > $2,
  'in_flight_by_node', coalesce((SELECT jsonb_agg(jsonb_build_object('node', f.node,
                                                                     'executing', f.n)
                                                  ORDER BY f.node) FROM flying f), '[]'),
  'gone', coalesce(ch.disabled_reason LIKE 'the endpoint answered 410 Gone%', false),
  'snoozed_until', CASE WHEN b.next_due > now() AND b.available = 0
                        THEN {{utc(b.next_due)}} ELSE '' END,
  'last_errors', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                    'job', e.id, 'at', coalesce({{utc(e.attempted_at)}}, ''),
                                    'attempt', e.attempt, 'error', left(e.last_error, 500))
                                  ORDER BY e.attempted_at DESC NULLS LAST)
                             FROM (SELECT * FROM errors ORDER BY attempted_at DESC NULLS LAST
                                    LIMIT 10) AS e), '[]')) AS body
  FROM ch, backlog b

-- fragment: listed_job
-- A job `j` as a delivery list carries it: everything but the payload, and the payload's stored
-- size (pg_column_size reads the value's header, not the value).
j.id, j.queue, j.tenant_id, j.channel_id, j.state, j.priority, j.attempt, j.max_attempts,
j.created_at, j.scheduled_at, j.finished_at, j.last_error, pg_column_size(j.payload) AS payload_bytes

-- name: ListDeliveries
-- Deliveries matching state $2, channel $3/$7, tenant $4, time $5–$6: walks at most $8 rows of
-- the index path $1 names, keeps the newest $9 that match.
-- param $1 path text: waiting | finished | any
-- param $2 state text?
-- param $3 walk_channel bigint?: a channel the walk itself seeks (an index has it first)
-- param $4 tenant bigint?
-- param $5 since timestamp with time zone?
-- param $6 until timestamp with time zone?
-- param $7 channel bigint?: a channel filtered after the walk
-- param $8 examine bigint
-- param $9 limit bigint
-- param $10 walk_tenant bigint?: a tenant whose channels the walk seeks (as $3)
-- column body jsonb
-- The store picks the path from the filter, so that the walk always follows an index and stops
-- after $8 rows:
--   waiting   available, parked or executing: the state's partial index, from the channel
--             or the tenant's channels when given (jobs_channel_available, jobs_parked);
--   finished  completed, discarded or cancelled: jobs_finished backwards over the finish time
--             range, or jobs_discarded from the channel or the tenant's channels;
--   any       the primary key backwards (the newest jobs).
-- The other filters (a channel or tenant the walk cannot seek, the creation time) are applied to
-- what the walk read. `exhaustive` says whether the walk ended before its bound, that is,
-- whether every matching row was seen. The payload is never read out, only its size.
WITH walked AS (
  (SELECT {{listed_job}} FROM bulkhead.jobs j
    WHERE $1::text = 'waiting' AND j.state = $2::text
      AND ($3::bigint IS NULL OR j.channel_id = $3)
      AND ($10::bigint IS NULL
           OR j.channel_id IN (SELECT ch.id FROM bulkhead.channels ch WHERE ch.tenant_id = $10))
    LIMIT $8)
  UNION ALL
  (SELECT {{listed_job}} FROM bulkhead.jobs j
    WHERE $1::text = 'finished' AND j.state = $2::text
      AND ($3::bigint IS NULL OR j.channel_id = $3)
      AND ($10::bigint IS NULL
           OR j.channel_id IN (SELECT ch.id FROM bulkhead.channels ch WHERE ch.tenant_id = $10))
      AND j.finished_at >= coalesce($5::timestamptz, '-infinity')
      AND j.finished_at < coalesce($6::timestamptz, 'infinity')
    ORDER BY j.finished_at DESC
    LIMIT $8)
  UNION ALL
  (SELECT {{listed_job}} FROM bulkhead.jobs j
    WHERE $1::text = 'any'
    ORDER BY j.id DESC
    LIMIT $8)
), kept AS (
  SELECT w.* FROM walked w
   WHERE ($4::bigint IS NULL OR w.tenant_id = $4)
     AND ($7::bigint IS NULL OR w.channel_id = $7)
     AND ($2::text IS NULL OR w.state = $2)
     AND ($1 = 'finished' OR $5::timestamptz IS NULL OR w.created_at >= $5)
     AND ($1 = 'finished' OR $6::timestamptz IS NULL OR w.created_at < $6)
   ORDER BY w.id DESC
   LIMIT $9
)
SELECT jsonb_build_object(
  'deliveries', coalesce((
    SELECT jsonb_agg(jsonb_build_object(
             'id', k.id, 'queue', k.queue, 'tenant', coalesce(t.name, k.tenant_id::text),
             'channel', k.channel_id, 'state', k.state, 'priority', k.priority,
             'attempt', k.attempt, 'max_attempts', k.max_attempts,
             'created_at', {{utc(k.created_at)}}, 'scheduled_at', {{utc(k.scheduled_at)}},
             'finished_at', coalesce({{utc(k.finished_at)}}, ''),
             'payload_bytes', k.payload_bytes,
             'last_error', coalesce(left(k.last_error, 200), '')) ORDER BY k.id DESC)
      FROM kept k LEFT JOIN bulkhead.tenants t ON t.id = k.tenant_id), '[]'),
  'examined', (SELECT count(*) FROM walked),
  'exhaustive', (SELECT count(*) FROM walked) < $8) AS body

-- name: Delivery
-- Delivery $1 with its attempt log, never its payload; no row when there is no such job.
-- param $1 id bigint
-- column body jsonb
SELECT jsonb_build_object(
  'id', j.id, 'queue', j.queue, 'tenant', coalesce(t.name, j.tenant_id::text),
  'tenant_id', j.tenant_id, 'channel', j.channel_id, 'state', j.state, 'priority', j.priority,
  'attempt', j.attempt, 'max_attempts', j.max_attempts,
  'created_at', {{utc(j.created_at)}}, 'scheduled_at', {{utc(j.scheduled_at)}},
  'finished_at', coalesce({{utc(j.finished_at)}}, ''),
  'attempted_by', coalesce(j.attempted_by, ''),
  'payload_bytes', pg_column_size(j.payload),
  'idempotency_key', j.idempotency_key,
  'last_error', coalesce(j.last_error, ''),
  -- The log holds the attempts that did not deliver. The one that did is in the row's own
  -- columns since migration 0016 (ADR 0026), and is shown as the last entry.
  'attempts', j.attempts
              || CASE WHEN j.delivered_status IS NOT NULL OR j.delivered_ms IS NOT NULL THEN
                   jsonb_build_array({{attempt_entry(j, j.delivered_ms, j.delivered_status,
                                                     NULL)}})
                 ELSE '[]' END,
  'ordering', NULL) AS body
  FROM bulkhead.jobs j LEFT JOIN bulkhead.tenants t ON t.id = j.tenant_id
 WHERE j.id = $1

-- name: Payload
-- Delivery $1's payload; no row when there is no such job.
-- param $1 id bigint
-- column payload jsonb
SELECT payload FROM bulkhead.jobs WHERE id = $1

-- fragment: channel_or_tenant
-- A count's filter of a job `j`: channel $1, tenant $2 (its channels), each when given.
($1::bigint IS NULL OR j.channel_id = $1)
AND ($2::bigint IS NULL
     OR j.channel_id IN (SELECT ch.id FROM bulkhead.channels ch WHERE ch.tenant_id = $2))

-- name: CountReplay
-- Discarded deliveries of channel $1 and/or tenant $2, discarded from $3 to before $4, counted to $5 + 1.
-- param $1 channel bigint?
-- param $2 tenant bigint?
-- param $3 since timestamp with time zone?
-- param $4 until timestamp with time zone?
-- param $5 cap integer
-- column jobs bigint
-- What a replay with that filter would take (AdminJobsStore's Replay): jobs_discarded, from
-- the channel or from each of the tenant's channels.
SELECT count(*) AS jobs FROM (
  SELECT 1 FROM bulkhead.jobs j
   WHERE j.state = 'discarded' AND {{channel_or_tenant}}
     AND ($3::timestamptz IS NULL OR j.finished_at >= $3)
     AND ($4::timestamptz IS NULL OR j.finished_at < $4)
   LIMIT $5 + 1) AS matched

-- name: CountCancel
-- Waiting deliveries (available or parked) of channel $1 and/or tenant $2, counted to $3 + 1.
-- param $1 channel bigint?
-- param $2 tenant bigint?
-- param $3 cap integer
-- column jobs bigint
-- What a cancel with that filter would take (AdminJobsStore's Cancel): each state in its own
-- partial index, as Cancel looks for them (a WHERE naming both states reads neither index).
SELECT (SELECT count(*) FROM (
          SELECT 1 FROM bulkhead.jobs j
           WHERE j.state = 'available' AND {{channel_or_tenant}} LIMIT $3 + 1) AS a)
     + (SELECT count(*) FROM (
          SELECT 1 FROM bulkhead.jobs j
           WHERE j.state = 'parked' AND {{channel_or_tenant}} LIMIT $3 + 1) AS p) AS jobs

-- name: FinishedBetween
-- Per tier, the deliveries that completed and that were discarded after $1, up to $2.
-- param $1 after timestamp with time zone
-- param $2 until timestamp with time zone
-- column queue text
-- column completed bigint
-- column discarded bigint
-- The rate sampler's count, every few seconds over the seconds since the last: one range of
-- jobs_finished (its newest rows, still in shared buffers), whatever the history holds.
SELECT j.queue, count(*) FILTER (WHERE j.state = 'completed') AS completed,
       count(*) FILTER (WHERE j.state = 'discarded') AS discarded
  FROM bulkhead.jobs j
 WHERE j.finished_at > $1 AND j.finished_at <= $2
 GROUP BY j.queue

-- name: WindowEnd
-- The rate sampler's next window: it ends $2 seconds before the database's now, and spans from
-- $1 (0 s when $1 is NULL: the first window only sets where counting starts).
-- param $1 start timestamp with time zone?
-- param $2 settle_s double precision
-- column window_end text
-- column span_s double precision
SELECT e.at::text AS window_end,
       coalesce(extract(epoch FROM e.at - $1::timestamptz)::float8, 0) AS span_s
  FROM (SELECT now() - $2 * interval '1 second' AS at) AS e

-- name: RecordAction
-- Writes one action to the audit log.
-- param $1 who text
-- param $2 action text
-- param $3 target text
-- param $4 filter jsonb
-- param $5 jobs bigint
-- column id bigint
INSERT INTO bulkhead.console_actions (who, action, target, filter, jobs)
VALUES ($1, $2, $3, $4, $5)
RETURNING id

-- name: ActionLog
-- The newest $1 entries of the audit log.
-- param $1 limit bigint
-- column body jsonb
SELECT coalesce(jsonb_agg(jsonb_build_object(
         'id', a.id, 'at', {{utc(a.at)}}, 'who', a.who, 'action', a.action,
         'target', a.target, 'filter', a.filter, 'jobs', a.jobs) ORDER BY a.id DESC), '[]') AS body
  FROM (SELECT * FROM bulkhead.console_actions ORDER BY id DESC LIMIT $1) AS a
