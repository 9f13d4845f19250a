-- The admin jobs store's statements: what bulkhead status, jobs, replay and cancel run
-- (worker/store/admin_jobs_store.h). Format: see claim_store.sql.
--
-- Each runs once per command, so it is planned with its parameters (a custom plan): the
-- `$n IS NULL OR …` filters fold away and the indexes of the remaining filters are used.

-- name: QueueStatus
-- Per tier: its waiting jobs by state and its lag.
-- column queue text
-- column available bigint
-- column scheduled bigint
-- column executing bigint
-- column parked bigint
-- column lag_s double precision
-- column held bigint: counted to 100,001
-- column rate_limited_channels bigint
-- Per tier, its waiting jobs by state and its lag (the age of the oldest due
-- available job: the first entry of each priority's range in jobs_claim). Every count reads
-- only a partial index of unfinished rows (jobs_claim, jobs_executing, jobs_parked), so its
-- cost follows the backlog and never the finished history. The available counts and the lag say
-- `priority BETWEEN 1 AND 3`, which names jobs_claim (migration 0006).
--
-- `held`: of the scheduled and parked jobs, those held behind an earlier live delivery of their
-- ordering key (the fragment ordering_held: only held entries are read, at most 100,001). A held
-- job is due at 'infinity', so it is never among the available ones nor in the lag.
-- `rate_limited_channels`: the channels of the tier's tenants with a rate_limit_per_s, from one
-- pass over channels (no index names them; there are as many as endpoints, not jobs).
WITH limited AS MATERIALIZED (
  SELECT te.tier, count(*) AS n
    FROM bulkhead.channels ch JOIN bulkhead.tenants te ON te.id = ch.tenant_id
   WHERE ch.rate_limit_per_s IS NOT NULL
   GROUP BY te.tier
)
SELECT q.name AS queue,
       (SELECT count(*) FROM bulkhead.job_rows j
         WHERE j.queue = q.name AND j.state = 'available' AND j.priority BETWEEN 1 AND 3
           AND j.scheduled_at <= now()) AS available,
       (SELECT count(*) FROM bulkhead.job_rows j
         WHERE j.queue = q.name AND j.state = 'available' AND j.priority BETWEEN 1 AND 3
           AND j.scheduled_at > now()) AS scheduled,
       (SELECT count(*) FROM bulkhead.job_rows j WHERE j.queue = q.name AND j.state = 'executing')
         AS executing,
       (SELECT count(*) FROM bulkhead.job_rows j WHERE j.queue = q.name AND j.state = 'parked')
         AS parked,
       {{queue_lag_s(q.name)}} AS lag_s,
       {{ordering_held(q.name)}} AS held,
       coalesce((SELECT l.n FROM limited l WHERE l.tier = q.name), 0) AS rate_limited_channels
  FROM bulkhead.tiers q
 ORDER BY q.name

-- name: NodeStatus
-- The registered nodes, their heartbeat and lease, and their jobs in flight.
-- column name text
-- column host text
-- column version text
-- column tiers text
-- column pid integer
-- column heartbeat_age_s double precision
-- column lease_left_s double precision
-- column executing bigint
-- The registered nodes, their heartbeat and lease, and the jobs each holds in
-- flight (jobs_executing, one index range per node).
SELECT n.name, coalesce(n.host, '') AS host, coalesce(n.version, '') AS version,
       array_to_string(n.tiers, ',') AS tiers, coalesce(n.pid, 0) AS pid,
       extract(epoch FROM now() - n.heartbeat_at)::float8 AS heartbeat_age_s,
       extract(epoch FROM n.lease_until - now())::float8 AS lease_left_s,
       (SELECT count(*) FROM bulkhead.job_rows j
         WHERE j.state = 'executing' AND j.attempted_by = n.name) AS executing
  FROM bulkhead.nodes n
 ORDER BY n.name

-- name: ListJobs
-- The newest jobs matching channel $1, tenant $2, state $3, at most $4.
-- param $1 channel bigint?
-- param $2 tenant bigint?
-- param $3 state text?
-- param $4 limit bigint
-- column id bigint
-- column queue text
-- column tenant text
-- column state text
-- column channel bigint
-- column priority smallint
-- column attempt smallint
-- column max_attempts smallint
-- column created_at text
-- column scheduled_at text
-- column finished_at text
-- column payload_bytes bigint
-- column last_error text
-- The newest jobs first (the primary key walked backwards), filtered by channel,
-- tenant and state, at most $4. The payload is never read out, only its size; the last error
-- is cut to 200 characters. A filter that matches few of many rows walks far: the command
-- bounds it with a statement timeout.
SELECT j.id, j.queue, coalesce(t.name, j.tenant_id::text) AS tenant, j.state,
       j.channel_id AS channel, j.priority, j.attempt, j.max_attempts,
       {{utc(j.created_at)}} AS created_at,
       {{utc(j.scheduled_at)}} AS scheduled_at,
       coalesce({{utc(j.finished_at)}}, '') AS finished_at,
       pg_column_size(j.payload)::bigint AS payload_bytes,
       coalesce(left(j.last_error, 200), '') AS last_error
  FROM bulkhead.job_rows j LEFT JOIN bulkhead.tenants t ON t.id = j.tenant_id
 WHERE ($1::bigint IS NULL OR j.channel_id = $1)
   AND ($2::bigint IS NULL OR j.tenant_id = $2)
   AND ($3::text IS NULL OR j.state = $3)
 ORDER BY j.id DESC
 LIMIT $4

-- name: Replay
-- Discarded jobs matching $1–$7 back to the queue with a fresh budget, at most $8.
-- param $1 id bigint?
-- param $2 channel bigint?
-- param $3 tenant bigint?
-- param $4 since_at timestamp with time zone?
-- param $5 since_age_s bigint?
-- param $6 until_at timestamp with time zone?
-- param $7 until_age_s bigint?
-- param $8 limit integer
-- column jobs bigint
-- column available bigint
-- column parked bigint
-- column more boolean
-- column woken bigint
-- Discarded jobs back to the queue, oldest discarded first, at most $8 of them
-- (jobs_finished walked from $4/$5 on; by id through the primary key). Each gets a fresh
-- attempt budget (attempt 0 of its max_attempts), is due now, goes to the queue of its
-- tenant's tier now, and waits behind every channel's fresh deliveries (priority 3, as an
-- unparked backlog) so that a large replay cannot starve them. A job whose channel's breaker
-- is not closed, or that is paused (a disabled channel is), is replayed parked. Its attempt
-- log and last error stay as history. One more row than the limit is locked to tell whether
-- more remain. Wakes the queues that got available jobs. Lowers the claim floor to the oldest.
WITH picked AS (
  SELECT j.id, j.finished_at FROM bulkhead.job_rows j
   WHERE j.state = 'discarded'
     AND ($1::bigint IS NULL OR j.id = $1)
     AND ($2::bigint IS NULL OR j.channel_id = $2)
     AND ($3::bigint IS NULL OR j.tenant_id = $3)
     AND ($4::timestamptz IS NULL OR j.finished_at >= $4)
     AND ($5::bigint IS NULL OR j.finished_at >= now() - $5 * interval '1 second')
     AND ($6::timestamptz IS NULL OR j.finished_at < $6)
     AND ($7::bigint IS NULL OR j.finished_at < now() - $7 * interval '1 second')
   ORDER BY j.finished_at, j.id
   LIMIT $8 + 1
     FOR UPDATE SKIP LOCKED
), chosen AS (
  SELECT id FROM picked ORDER BY finished_at, id LIMIT $8
), replayed AS (
  UPDATE bulkhead.job_rows AS j
     SET state = CASE WHEN flow.ok THEN 'available' ELSE 'parked' END,
         priority = 3, attempt = 0, finished_at = NULL, scheduled_at = now(), queue = t.tier
    FROM chosen, bulkhead.channels AS ch, bulkhead.tenants AS t,
         LATERAL (SELECT {{flowing}}) AS flow(ok)
   WHERE j.id = chosen.id AND ch.id = j.channel_id AND t.id = j.tenant_id
  RETURNING j.state, j.queue
), lowered AS (
  -- The claim floor (ADR 0027) goes down to the oldest job replayed, and its generation up, so
  -- that a leader raising it from a snapshot taken before this commits leaves it alone.
  UPDATE bulkhead.claim_floor AS f
     SET floor_id = least(f.floor_id, (SELECT min(c.id) FROM chosen c)),
         generation = f.generation + 1
   WHERE f.one AND EXISTS (SELECT FROM chosen)
)
SELECT (SELECT count(*) FROM replayed) AS jobs,
       (SELECT count(*) FROM replayed WHERE state = 'available') AS available,
       (SELECT count(*) FROM replayed WHERE state = 'parked') AS parked,
       (SELECT count(*) FROM picked) > $8 AS more,
       (SELECT count(pg_notify('bulkhead_jobs', queue))
          FROM (SELECT DISTINCT queue FROM replayed WHERE state = 'available') AS woken) AS woken

-- fragment: waiting_filter
-- Cancel's filter of a waiting job `j`: id $1, channel $2, tenant $3 (its channels), each when
-- given.
($1::bigint IS NULL OR j.id = $1)
AND ($2::bigint IS NULL OR j.channel_id = $2)
AND ($3::bigint IS NULL
     OR j.channel_id IN (SELECT ch.id FROM bulkhead.channels ch WHERE ch.tenant_id = $3))

-- name: Cancel
-- Waiting jobs matching id $1, channel $2, tenant $3 to cancelled, at most $4.
-- param $1 id bigint?
-- param $2 channel bigint?
-- param $3 tenant bigint?
-- param $4 limit integer
-- column jobs bigint
-- column more boolean
-- Waiting jobs (available, due or not, and parked) to cancelled, at most $4, by id or
-- by channel (jobs_channel_available, jobs_parked) or tenant (its channels, then the same).
-- Each state is looked for in its own partial index (a WHERE naming both states implies
-- neither predicate, and was planned as a scan of the whole table); the candidates are then
-- locked through the primary key, still waiting. A job in flight is not waiting and is left
-- alone: its attempt finishes and is recorded as usual. Rows another session holds (a claim
-- taking them right now) are skipped.
WITH candidates AS (
  (SELECT j.id FROM bulkhead.job_rows j
    WHERE j.state = 'available' AND {{waiting_filter}}
    LIMIT $4 + 1)
  UNION ALL
  (SELECT j.id FROM bulkhead.job_rows j
    WHERE j.state = 'parked' AND {{waiting_filter}}
    LIMIT $4 + 1)
), picked AS (
  SELECT j.id FROM bulkhead.job_rows j
   WHERE j.id IN (SELECT id FROM candidates) AND j.state IN ('available', 'parked')
   LIMIT $4 + 1
     FOR UPDATE SKIP LOCKED
), chosen AS (
  SELECT id FROM picked LIMIT $4
), cancelled AS (
  UPDATE bulkhead.job_rows AS j
     SET state = 'cancelled', finished_at = now()
    FROM chosen
   WHERE j.id = chosen.id
  RETURNING 1
)
SELECT (SELECT count(*) FROM cancelled) AS jobs, (SELECT count(*) FROM picked) > $4 AS more

-- name: FindJob
-- Job $1's state, node and attempt.
-- param $1 id bigint
-- column state text
-- column node text
-- column attempt smallint
-- One job's state and owner, to explain a cancel that changed nothing.
SELECT state, coalesce(attempted_by, '') AS node, attempt FROM bulkhead.job_rows WHERE id = $1
