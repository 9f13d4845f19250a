-- The fleet store's statements: the node's registration and heartbeat, and the maintenance
-- leader's rounds — leadership, rescue, the breaker's repairs, pruning and the metrics samples
-- (worker/store/fleet_store.h). Format: see claim_store.sql.
--
-- The leader's samples for the metrics (bulkhead_jobs, _breakers, _queue_lag_seconds,
-- bulkhead_ordering_held) are run
-- by the maintenance leader every 15 s, never per scrape. Each reads one partial index's
-- rows only — the waiting, executing and not-closed — so finished jobs, however many, are
-- never read: the cost grows with the backlog (a million parked rows: ~0.2 s every 15 s on
-- one node of the fleet), not with the table. Every tier comes back, with 0 for an empty
-- state, so a series does not vanish when its count reaches 0.

-- name: RegisterTiers
-- Makes the tiers in the JSON array $1 known (no-op for known ones).
-- param $1 tiers jsonb
-- A node makes the tiers it serves known, so tenants can be put on them.
INSERT INTO bulkhead.tiers (name)
SELECT jsonb_array_elements_text($1::jsonb)
ON CONFLICT (name) DO NOTHING

-- name: RegisterNode
-- Inserts or refreshes node $1's row, with a lease of $6 ms from now.
-- param $1 node text
-- param $2 host text
-- param $3 pid integer
-- param $4 version text
-- param $5 tiers jsonb
-- param $6 lease_ms double precision
-- One row per node name; a restarted node takes its row over.
INSERT INTO bulkhead.nodes (name, host, pid, version, tiers, started_at, heartbeat_at,
                            lease_until)
VALUES ($1, $2, $3, $4, ARRAY(SELECT jsonb_array_elements_text($5::jsonb)), now(), now(),
        now() + $6 * interval '1 millisecond')
ON CONFLICT (name) DO UPDATE
   SET host = EXCLUDED.host, pid = EXCLUDED.pid, version = EXCLUDED.version,
       tiers = EXCLUDED.tiers, started_at = EXCLUDED.started_at,
       heartbeat_at = EXCLUDED.heartbeat_at, lease_until = EXCLUDED.lease_until

-- name: Heartbeat
-- Moves node $1's heartbeat to now and its lease to now + $2 ms; no row when node $1 has none.
-- param $1 node text
-- param $2 lease_ms double precision
-- column name text
-- A node cut off for over an hour comes back to find its row forgotten (ForgetNodes); the
-- caller then registers again (RegisterNode), or rescue would take every job it claims.
UPDATE bulkhead.nodes
   SET heartbeat_at = now(), lease_until = now() + $2 * interval '1 millisecond'
 WHERE name = $1
RETURNING name

-- name: ReturnStranded
-- Returns node $1's executing jobs claimed over $3 ms ago that it does not hold ($2), attempt unspent.
-- param $1 node text
-- param $2 held bigint[]
-- param $3 min_age_ms double precision
-- column jobs bigint
-- column ids text
-- column woken bigint
-- A job can be `executing` under a live node that no longer knows it has it: a claim (or a
-- probe claim) that committed on the server while its connection dropped before the reply
-- arrived, or a hand-back that failed. Rescue takes only the jobs of nodes without a lease, so
-- without this such a job waits for as long as its node lives. The node passes every job it
-- holds in memory — in flight, waiting for the writer, or for a 410's disable — and this
-- returns the rest, fenced to its own name. None was sent (a job the node sent is one it
-- holds until its result is written), so the attempt is not spent: attempt - 1, as HandBack;
-- `available` in its tenant's tier now, or `parked` if its channel does not flow (a lost
-- probe claim's channel is half-open until expire_probes re-opens it). The age guard ($3)
-- leaves alone a claim whose reply is still on its way to the node's runner: a claim is
-- registered in memory milliseconds after it commits, far inside the guard. The claim stamps
-- attempted_at with the time each row is claimed (clock_timestamp()), so a claim that waited
-- behind a lock is as young as its commit; stamped with its statement's start, it was taken
-- for stranded while it was being sent (issue 31). Read on
-- jobs_executing (attempted_by).
WITH stranded AS (
  UPDATE bulkhead.job_rows AS j
     SET state = CASE WHEN {{flowing}} THEN 'available' ELSE 'parked' END,
         priority = CASE WHEN {{flowing}} THEN j.priority ELSE 3 END,
         attempt = j.attempt - 1,
         queue = t.tier
    FROM bulkhead.channels ch, bulkhead.tenants t
   WHERE j.state = 'executing' AND j.attempted_by = $1
     AND j.id <> ALL($2::bigint[])
     AND j.attempted_at < now() - $3 * interval '1 millisecond'
     AND ch.id = j.channel_id AND t.id = j.tenant_id
  RETURNING j.id, j.queue, j.state
)
SELECT (SELECT count(*) FROM stranded) AS jobs,
       (SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '')
          FROM (SELECT id FROM stranded ORDER BY id LIMIT 20) AS first) AS ids,
       (SELECT count(pg_notify('bulkhead_jobs', queue))
          FROM (SELECT DISTINCT queue FROM stranded WHERE state = 'available') AS woken) AS woken

-- name: RemoveNode
-- Removes node $1's row (clean shutdown), and its runners' rows in bulkhead.sleepers.
-- param $1 node text
WITH awake AS (DELETE FROM bulkhead.sleepers WHERE node = $1)
DELETE FROM bulkhead.nodes WHERE name = $1

-- name: Lead
-- Takes the fleet's leadership for this session, named after node $1, if no other session holds it.
-- param $1 node text
-- column led boolean
-- The fleet's maintenance runs on the one node whose maintenance connection holds this
-- session-level advisory lock. The lock dies with the connection, so when the leader's process
-- or its connection dies, another node's next try (every few seconds) takes over; no row
-- records a leader that a crash could leave behind. The connection names itself after its
-- node (application_name), so that depose can tell whose it is: by its leader_tag, since
-- PostgreSQL clips application_name to 63 bytes and shows non-ASCII characters as '?', and a
-- node's name (the host name and pid by default) can be 200 characters of anything.
SELECT pg_try_advisory_lock(7094703853087728997) AS led
  FROM (SELECT set_config('application_name', {{leader_tag($1)}}, false)) AS me

-- name: Depose
-- Terminates the leader's connection if it belongs to no node with a running lease.
-- column deposed bigint
-- A leader that is alive to Postgres but not to the fleet — frozen (SIGSTOP, a stalled
-- VM), or so cut off that its heartbeat no longer lands — keeps its connection and so the lock.
-- When the lock's holder belongs to no node with a running lease, it is terminated, which
-- releases the lock for the next try. Its node, if it ever runs again, finds its connection
-- gone and competes like any other. The holder's node is found by the tag Lead gave its
-- connection (the first 38 bytes: the prefix and the name's hash), never by its clipped name.
SELECT count(pg_terminate_backend(a.pid)) AS deposed
  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
   AND (l.classid::bigint << 32 | l.objid::bigint) = 7094703853087728997
   AND a.application_name LIKE 'bulkhead-maintenance:%'
   AND NOT EXISTS (SELECT 1 FROM bulkhead.nodes n
                    WHERE left(a.application_name, 38) = left({{leader_tag(n.name)}}, 38)
                      AND n.lease_until > now())

-- fragment: leader_tag(name)
-- The application_name of node `name`'s maintenance connection: 'bulkhead-maintenance:', the
-- first 16 hex digits of the name's md5 (what depose compares), ':', and the name's first 25
-- characters with anything but printable ASCII as '?' (for an operator reading
-- pg_stat_activity): at most 63 bytes, so PostgreSQL keeps all of it.
('bulkhead-maintenance:' || left(md5({{name}}), 16) || ':'
   || left(regexp_replace({{name}}, '[^ -~]', '?', 'g'), 25))

-- name: RescueLost
-- Returns to the queue (or discards) the jobs of nodes whose lease ran out, and of node $1.
-- param $1 also text
-- column jobs bigint
-- column discarded bigint
-- column nodes text
-- column woken bigint
-- Jobs `executing` under a node whose lease has run out (or that has no row at
-- all, or that is $1: a node starting under the name of its previous, dead self) go back to
-- the queue: `available` at once, keeping the attempt they spent — the request
-- may have reached the endpoint, so it counts — or `discarded` if that was their last attempt;
-- `parked` if their channel's breaker is not closed or the channel is paused. A result the lost
-- node sends later (a zombie that wakes up) is fenced off by record's WHERE (state, node and
-- attempt), so it changes nothing.
-- The nodes that own executing jobs are found by a skip scan over jobs_executing — one index
-- probe per node — so the cost follows the number of nodes, not of jobs in flight.
WITH RECURSIVE owner(name) AS (
  (SELECT j.attempted_by FROM bulkhead.job_rows j
    WHERE j.state = 'executing' ORDER BY j.attempted_by LIMIT 1)
  UNION ALL
  SELECT (SELECT j.attempted_by FROM bulkhead.job_rows j
           WHERE j.state = 'executing' AND j.attempted_by > o.name
           ORDER BY j.attempted_by LIMIT 1)
    FROM owner o
   WHERE o.name IS NOT NULL
), lost AS (
  SELECT o.name FROM owner o
   WHERE o.name IS NOT NULL
     AND (o.name = $1
          OR NOT EXISTS (SELECT 1 FROM bulkhead.nodes n
                          WHERE n.name = o.name AND n.lease_until > now()))
), rescued AS (
  UPDATE bulkhead.job_rows AS j
     SET state = CASE WHEN j.attempt >= j.max_attempts THEN 'discarded'
                      WHEN NOT {{flowing}} THEN 'parked'
                      ELSE 'available' END,
         priority = CASE WHEN j.attempt < j.max_attempts
                              AND NOT {{flowing}} THEN 3
                         ELSE j.priority END,
         finished_at = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
         scheduled_at = CASE WHEN j.attempt >= j.max_attempts THEN j.scheduled_at ELSE now() END,
         queue = CASE WHEN j.attempt >= j.max_attempts THEN j.queue ELSE t.tier END,
         last_error = 'rescued: node ' || j.attempted_by || ' lost its lease during attempt '
                      || j.attempt,
         attempts = CASE WHEN jsonb_array_length(j.attempts) >= 20 THEN j.attempts - 0
                         ELSE j.attempts END
                    || jsonb_build_array(jsonb_build_object(
                         'attempt', j.attempt, 'at', j.attempted_at, 'node', j.attempted_by,
                         'error', 'rescued: the node lost its lease'))
    FROM lost, bulkhead.channels ch, bulkhead.tenants t
   WHERE j.state = 'executing' AND j.attempted_by = lost.name
     AND ch.id = j.channel_id AND t.id = j.tenant_id
  RETURNING j.queue, j.state, j.attempted_by
)
SELECT (SELECT count(*) FROM rescued) AS jobs,
       (SELECT count(*) FROM rescued WHERE state = 'discarded') AS discarded,
       (SELECT coalesce(string_agg(DISTINCT attempted_by, ','), '') FROM rescued) AS nodes,
       (SELECT count(pg_notify('bulkhead_jobs', queue))
          FROM (SELECT DISTINCT queue FROM rescued WHERE state = 'available') AS woken) AS woken

-- name: ForgetNodes
-- Removes the rows of nodes whose lease ended over $1 ms ago and that own no job.
-- param $1 after_ms double precision
-- Removes the rows of nodes whose lease ended more than $1 ms ago and that own
-- no executing job (rescue ran first), so the registry shows the fleet, not its history.
-- A scalar sub-select, not NOT EXISTS: PostgreSQL may turn NOT EXISTS into an anti-join that
-- reads every job in flight of the fleet; this stays one jobs_executing probe per expired node.
DELETE FROM bulkhead.nodes n
 WHERE n.lease_until < now() - $1 * interval '1 millisecond'
   AND (SELECT true FROM bulkhead.job_rows j
         WHERE j.state = 'executing' AND j.attempted_by = n.name LIMIT 1) IS NULL

-- name: ForgetSleepers
-- Deletes the bulkhead.sleepers rows of nodes that hold no lease (ADR 0019).
-- A node that died while its runners waited leaves rows that make every enqueue of their queues
-- notify. The table holds a few rows per node, so this reads it whole.
DELETE FROM bulkhead.sleepers s
 WHERE NOT EXISTS (SELECT 1 FROM bulkhead.nodes n WHERE n.name = s.node AND n.lease_until > now())

-- name: PruneFinished
-- Deletes up to $2 jobs with ids in $3 to $4, exclusive, finished over $1 ms ago, oldest first.
-- param $1 retention_ms double precision
-- param $2 batch bigint
-- param $3 low bigint
-- param $4 high bigint: exclusive
-- column pruned bigint: the jobs deleted
-- Deletes up to $2 jobs that finished (completed, discarded, cancelled) more
-- than $1 ms ago, oldest first along jobs_finished. Bounded, so that one run never holds locks
-- or bloats WAL for long; the leader repeats it until a batch comes back short.
-- The batch's ids come as one array with its lowest and highest, and the DELETE reaches each row
-- through the primary key. On the table split into ranges of ids (ADR 0026) the bounds prune
-- every range outside the batch when the plan runs; an `id IN (sub-select)` there was a hash
-- join over a seq scan of every range, 0.7 s a batch of 1,000 on 32 ranges.
-- The conditions are repeated outside the batch on purpose: when a row the batch picked is
-- locked (an operator's replay, not yet committed), the DELETE waits and then rechecks only its
-- own WHERE on the row's new version (EvalPlanQual), never the batch's snapshot — so a job
-- replayed meanwhile, waiting again, is left alone instead of deleted.
-- Each job's idempotency key goes with it (migration 0019): the row of idempotency_keys that
-- names the job, reached by its primary key; a key another job has taken over since is left.
-- The ids $3 to $4 are the part of the table pruned row by row (JobRangeKeeper): jobs_first,
-- the default range, a range a live job holds. Ranges the leader drops whole are left to it,
-- and the bounds leave them out of the plan when it starts, as the batch's own do.
WITH batch AS MATERIALIZED (
  SELECT coalesce(array_agg(b.id), '{}') AS ids, min(b.id) AS lowest, max(b.id) AS highest
    FROM (SELECT j.id FROM bulkhead.job_rows j
           WHERE j.state IN ('completed', 'discarded', 'cancelled')
             AND j.finished_at < now() - $1 * interval '1 millisecond'
             AND j.id >= $3 AND j.id < $4
           ORDER BY j.finished_at, j.id
           LIMIT $2) AS b
), gone AS (
  DELETE FROM bulkhead.job_rows
   WHERE id = ANY((SELECT ids FROM batch)::bigint[])
     AND id BETWEEN (SELECT lowest FROM batch) AND (SELECT highest FROM batch)
     AND state IN ('completed', 'discarded', 'cancelled')
     AND finished_at < now() - $1 * interval '1 millisecond'
  RETURNING id, channel_id, idempotency_key
), keys AS (
  DELETE FROM bulkhead.idempotency_keys k
   USING gone g
   WHERE g.idempotency_key IS NOT NULL
     AND k.channel_id = g.channel_id AND k.key = g.idempotency_key AND k.job_id = g.id
)
SELECT count(*) AS pruned FROM gone

-- name: JobRanges
-- Every range of jobs, lowest first, the default range last (migration 0021).
-- column range_name text
-- column low bigint?: NULL for jobs_first (no lower bound) and the default range
-- column high bigint?: exclusive; NULL for the default range
-- column is_default boolean
-- A read of the catalog (bulkhead.job_ranges()), not of jobs.
SELECT r.range_name, r.low, r.high, r.is_default FROM bulkhead.job_ranges() r

-- name: AddJobRange
-- Adds the range of ids $1 to $2, exclusive, to jobs.
-- param $1 low bigint
-- param $2 high bigint
-- column range_name text
-- bulkhead.add_job_range (migration 0021): fails with 23514 when an id at or above $1 was drawn
-- into the default range meanwhile, and with 55P03 when a lock waits over a second.
SELECT bulkhead.add_job_range($1, $2) AS range_name

-- name: RangeFacts
-- Whether every finished job with an id in $1 to $2 finished over $3 ms ago, and whether one is live.
-- param $1 low bigint
-- param $2 high bigint: exclusive
-- param $3 retention_ms double precision
-- column expired boolean: no job there finished within the retention (true for none finished)
-- column live boolean: a job there is available, executing or parked
-- Four index probes of one range, which the bounds pick when the plan starts: the newest end of
-- jobs_finished, and one entry of each live state's partial index. Never a read of the range.
SELECT coalesce((SELECT max(j.finished_at) FROM bulkhead.job_rows j
                  WHERE j.id >= $1 AND j.id < $2
                    AND j.state IN ('completed', 'discarded', 'cancelled'))
                < now() - $3 * interval '1 millisecond', true) AS expired,
       EXISTS (SELECT 1 FROM bulkhead.job_rows j
                WHERE j.id >= $1 AND j.id < $2 AND j.state = 'available')
       OR EXISTS (SELECT 1 FROM bulkhead.job_rows j
                   WHERE j.id >= $1 AND j.id < $2 AND j.state = 'executing')
       OR EXISTS (SELECT 1 FROM bulkhead.job_rows j
                   WHERE j.id >= $1 AND j.id < $2 AND j.state = 'parked') AS live

-- name: ForgetRangeKeys
-- Deletes the idempotency keys of the jobs with ids in $1 to $2, exclusive.
-- param $1 low bigint
-- param $2 high bigint: exclusive
-- Run before a range is dropped, when every job in it is past the retention: a key is free
-- once its job is, as when the prune deletes them together. One read of the range (its keyed
-- rows name their keys), once in the range's life; a key another job has taken over is left.
DELETE FROM bulkhead.idempotency_keys k
 USING bulkhead.job_rows j
 WHERE j.id >= $1 AND j.id < $2 AND j.idempotency_key IS NOT NULL
   AND k.channel_id = j.channel_id AND k.key = j.idempotency_key AND k.job_id = j.id

-- name: DropJobRange
-- Drops the range $1 if every job in it finished over $2 ms ago.
-- param $1 range_name text
-- param $2 retention_ms double precision
-- column dropped boolean
-- bulkhead.drop_job_range (migration 0021) checks again under its lock, which it holds for the
-- check and the drop, and fails with 55P03 when that lock waits over 200 ms.
SELECT bulkhead.drop_job_range($1, now() - $2 * interval '1 millisecond') AS dropped

-- name: HighestJobId
-- The highest id of a committed job (0 for none): SettleClaimFloor's bound, read just before it.
-- column id bigint
-- One descent of jobs_pkey from its end. Committed rows only, which is what the floor needs: an
-- id below it was drawn before it, so its transaction either ended already or still holds its
-- lock on bulkhead.job_rows when SettleClaimFloor, the next statement, lists the lockers.
SELECT coalesce((SELECT j.id FROM bulkhead.job_rows j ORDER BY j.id DESC LIMIT 1), 0) AS id

-- name: SettleClaimFloor
-- Settles the floor's pending bound once its lockers have ended; $1 + 1 is the next one.
-- param $1 highest bigint: HighestJobId, read in the statement before
-- column settled_below bigint
-- ADR 0027 (migration 0017). The pending bound was one above the highest committed id when it
-- was read, and its lockers every transaction that held a ROW EXCLUSIVE lock on bulkhead.job_rows
-- right after. When none of them is left, every id below the bound was drawn by a transaction
-- that has ended (an INSERT takes that lock before its id's default runs and keeps it until its
-- transaction ends; a vacuum's lock, which can last minutes, is another mode), so the bound
-- settles: the next snapshot sees every row below it as it stays. Then $1 + 1 and today's
-- lockers become the pending bound; until then the bound waits (a long application
-- transaction that enqueued holds it back, and so holds the floor). Lockers are virtual
-- transaction ids, which name one transaction of one backend; a prepared transaction has no
-- backend and stays listed until it is committed or rolled back. The leader's own locks are
-- left out. pg_locks is read as one view of the lock table, by any role.
WITH lockers AS (
  SELECT coalesce(array_agg(DISTINCT l.virtualtransaction), '{}') AS now
    FROM pg_locks l
   WHERE l.locktype = 'relation' AND l.relation = 'bulkhead.job_rows'::regclass
     AND l.mode = 'RowExclusiveLock'
     AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
     AND l.pid IS DISTINCT FROM pg_backend_pid()
)
UPDATE bulkhead.claim_floor AS f
   SET settled_below = CASE WHEN s.ended THEN greatest(f.settled_below, f.pending_below)
                            ELSE f.settled_below END,
       pending_below = CASE WHEN s.ended THEN $1::bigint + 1 ELSE f.pending_below END,
       pending_lockers = CASE WHEN s.ended THEN s.now ELSE f.pending_lockers END
  FROM (SELECT c.pending_below IS NULL OR NOT (c.pending_lockers && l.now) AS ended, l.now
          FROM bulkhead.claim_floor c, lockers l
         WHERE c.one) AS s
 WHERE f.one
RETURNING f.settled_below

-- name: AdvanceClaimFloor
-- Raises the claim floor to the first unfinished job, at most $1 ids on, below settled_below.
-- param $1 step bigint: ids one call may pass at most
-- ADR 0027. The walk goes up jobs_pkey from the floor and stops at the first job that is not
-- finished (available, executing, parked: any of them may still be claimed), or at the settled
-- bound, or $1 ids on, so one call reads at most $1 rows; a floor far behind (a first run beside
-- a week of history) catches up over several calls. A row below the settled bound that the walk
-- saw finished stays finished, but for a replay, which bumps the generation in the statement that
-- makes jobs claimable again: if one committed after this statement's snapshot, the condition on
-- the generation, checked again on the row's newest version, leaves the floor where the replay
-- put it. The floor's row is named by its key (`one`) everywhere: an unanalyzed table is
-- planned as 800 rows, and the join of two such put this plan past jit_above_cost.
UPDATE bulkhead.claim_floor AS f
   SET floor_id = n.floor_id, advanced_at = now()
  FROM (SELECT c.generation,
               coalesce((SELECT j.id FROM bulkhead.job_rows j
                          WHERE j.id >= c.floor_id AND j.id < c.upto
                            AND j.state NOT IN ('completed', 'discarded', 'cancelled')
                          ORDER BY j.id
                          LIMIT 1), c.upto) AS floor_id
          FROM (SELECT b.generation, b.floor_id, least(b.settled_below, b.floor_id + $1) AS upto
                  FROM bulkhead.claim_floor b
                 WHERE b.one) AS c) AS n
 WHERE f.one AND f.generation = n.generation AND n.floor_id > f.floor_id

-- name: PruneOldSecrets
-- Deletes old channel secrets whose window ended and clears the gate of channels left without any.
-- column pruned bigint
-- column cleared bigint
-- Deletes old channel secrets whose rotation window ended, and clears the
-- claim's gate (channels.old_secrets_until) of channels whose last old secret has expired,
-- through channels_old_secrets_until. The clearing tests the gate on the row as it is when the
-- UPDATE reaches it, not on a snapshot: a rotation that moved the gate forward meanwhile keeps
-- it. Few rows (rotations are rare), so unbatched. Returns the secrets deleted.
WITH pruned AS (
  DELETE FROM bulkhead.channel_secrets WHERE expires_at <= now() RETURNING 1
), cleared AS (
  UPDATE bulkhead.channels SET old_secrets_until = NULL WHERE old_secrets_until <= now()
  RETURNING 1
)
SELECT (SELECT count(*) FROM pruned) AS pruned, (SELECT count(*) FROM cleared) AS cleared

-- name: ParkBehindOpen
-- Parks the available jobs of channels whose breaker is not closed; returns jobs and channels.
-- column jobs bigint
-- column channels bigint
-- Parks the available jobs of every channel whose breaker is not closed.
-- They get there when an enqueue read the breaker closed and committed after the statement
-- that opened it — about a thousand jobs when a 10-client backlog is being created as the
-- breaker opens. The claim would park them too, but only once a slot is free, and a hanging
-- endpoint holds its slots for the whole request timeout; this runs every second. It reads
-- only the broken channels (channels_breaker_due) and their available jobs: the channels come
-- as an array, as in park_backlog (sql_fragments.sql), so that each is one descent of
-- jobs_channel_available whatever the statistics say; as a join it read every channel's
-- available jobs every second (27 buffers a job beside a burst, issue 34). At most 5,000 jobs a
-- round, as a breaker transition's batch (park_backlog), so the leader's statement fits in the
-- statement timeout however much has slipped in or a keeper that died left behind; the next
-- rounds take the rest.
WITH broken AS (
  SELECT ch.id FROM bulkhead.channels ch WHERE ch.breaker_state <> 'closed'
), parked AS (
  {{park_backlog(broken, 5000)}}
)
SELECT count(*) AS jobs, count(DISTINCT channel_id) AS channels FROM parked

-- name: ReconcileParked
-- Unparks the jobs of closed, unpaused channels; returns jobs and channels.
-- column jobs bigint
-- column channels bigint
-- column woken bigint
-- Unparks the jobs of channels that are closed and not paused. They strand
-- there when an enqueue read the breaker open (or the channel paused) and committed after the
-- statement that closed it; or when an operator closed a breaker by hand in SQL.
-- A skip scan over jobs_parked finds the channels that have parked jobs at one index probe
-- per such channel, so the cost does not grow with the number of parked rows. The channel row
-- is locked SKIP LOCKED: a channel in the middle of a transition is left for the next round.
-- At most 5,000 jobs a round, for ParkBehindOpen's reason.
WITH RECURSIVE parked_channel(id) AS (
  (SELECT j.channel_id FROM bulkhead.job_rows j
    WHERE j.state = 'parked' ORDER BY j.channel_id LIMIT 1)
  UNION ALL
  SELECT (SELECT j.channel_id FROM bulkhead.job_rows j
           WHERE j.state = 'parked' AND j.channel_id > p.id ORDER BY j.channel_id LIMIT 1)
    FROM parked_channel p
   WHERE p.id IS NOT NULL
), stranded AS (
  SELECT ch.id
    FROM parked_channel p JOIN bulkhead.channels ch ON ch.id = p.id
   WHERE {{flowing}}
     FOR NO KEY UPDATE OF ch SKIP LOCKED
), unparked AS (
  {{unpark_backlog(stranded, true, 5000)}}
)
SELECT (SELECT count(*) FROM unparked) AS jobs,
       (SELECT count(DISTINCT channel_id) FROM unparked) AS channels,
       {{wake_queues(unparked)}} AS woken

-- name: SampleJobs
-- Jobs per tier × available, scheduled, parked, executing.
-- column tier text
-- column state text
-- column n bigint
-- Jobs per queue in the waiting and running states. `available` is what can be
-- claimed now; `scheduled` is available but not yet due (retries waiting); read on jobs_claim
-- (named by its predicate's `priority BETWEEN 1 AND 3`, migration 0006), jobs_parked and
-- jobs_executing respectively.
WITH counts AS (
  SELECT j.queue, CASE WHEN j.scheduled_at <= now() THEN 'available' ELSE 'scheduled' END AS s,
         count(*) AS n
    FROM bulkhead.job_rows j WHERE j.state = 'available' AND j.priority BETWEEN 1 AND 3
   GROUP BY 1, 2
  UNION ALL
  SELECT j.queue, 'parked', count(*) FROM bulkhead.job_rows j WHERE j.state = 'parked' GROUP BY 1
  UNION ALL
  SELECT j.queue, 'executing', count(*) FROM bulkhead.job_rows j WHERE j.state = 'executing'
   GROUP BY 1
)
SELECT t.name AS tier, s.state, coalesce(c.n, 0) AS n
  FROM bulkhead.tiers t
 CROSS JOIN (VALUES ('available'), ('scheduled'), ('parked'), ('executing')) AS s(state)
  LEFT JOIN counts c ON c.queue = t.name AND c.s = s.state
 ORDER BY 1, 2

-- name: SampleBreakers
-- Channels per tier × open, half_open.
-- column tier text
-- column state text
-- column n bigint
-- Channels per tier whose breaker is open or half-open (on
-- channels_breaker_due); closed is the rest and is not counted, which would read every channel.
WITH counts AS (
  SELECT te.tier, ch.breaker_state AS s, count(*) AS n
    FROM bulkhead.channels ch JOIN bulkhead.tenants te ON te.id = ch.tenant_id
   WHERE ch.breaker_state <> 'closed'
   GROUP BY 1, 2
)
SELECT t.name AS tier, s.state, coalesce(c.n, 0) AS n
  FROM bulkhead.tiers t
 CROSS JOIN (VALUES ('open'), ('half_open')) AS s(state)
  LEFT JOIN counts c ON c.tier = t.name AND c.s = s.state
 ORDER BY 1, 2

-- name: SampleLag
-- Per tier, the age of its oldest claimable job.
-- column tier text
-- column lag_s double precision
-- Per tier, the age of its oldest claimable job (available and due), 0 when none:
-- one jobs_claim probe per priority (the index's order is priority first, so the oldest of
-- each priority is its first due row). `priority = p.priority` is a column of another row, which
-- does not imply jobs_claim's predicate; `BETWEEN 1 AND 3` does (migration 0006).
SELECT t.name AS tier,
       coalesce(greatest(extract(epoch FROM now() - min(o.scheduled_at)), 0), 0)::float8 AS lag_s
  FROM bulkhead.tiers t
 CROSS JOIN (VALUES (1), (2), (3)) AS p(priority)
  LEFT JOIN LATERAL (
        SELECT j.scheduled_at FROM bulkhead.job_rows j
         WHERE j.queue = t.name AND j.state = 'available' AND j.priority = p.priority
           AND j.priority BETWEEN 1 AND 3 AND j.scheduled_at <= now()
         ORDER BY j.scheduled_at LIMIT 1) AS o ON true
 GROUP BY t.name
 ORDER BY 1

-- name: SampleClaimFloor
-- The age of the job the claim floor stands at, 0 when every job is finished.
-- column age_s double precision
-- ADR 0027. The first job at or above the floor is the oldest that can still be claimed (the
-- floor stops at the first available, executing or parked job), or, while the floor waits for
-- an open transaction that enqueued, the first job drawn after the bound it waits on. Either
-- way its age says how far back every claim still reads: a parked job of last week, or an
-- application transaction open for an hour. One descent of jobs_pkey from the floor.
SELECT coalesce(extract(epoch FROM now() - (
         SELECT j.created_at FROM bulkhead.job_rows j
          WHERE j.id >= f.floor_id ORDER BY j.id LIMIT 1)), 0)::float8 AS age_s
  FROM bulkhead.claim_floor f
 WHERE f.one

-- name: SampleOrdering
-- Per tier, its deliveries held behind an earlier one of their ordering key, to 100,000.
-- column tier text
-- column held bigint
-- Per tier, the deliveries held behind an earlier live delivery of their ordering
-- key (migration 0013): the fragment ordering_held, which reads only held entries — the
-- 'infinity' end of jobs_claim's priority ranges, and the held parked ones — and stops at
-- 100,001 a tier. So a sample costs what is held, bounded, never the keyed deliveries that go
-- (jobs_ordering would read each of them, and its heap row for scheduled_at). 100,000 means
-- "at least": a gauge that stops there still shows a key's backlog building up.
SELECT t.name AS tier, least({{ordering_held(t.name)}}, 100000) AS held
  FROM bulkhead.tiers t
 ORDER BY 1
