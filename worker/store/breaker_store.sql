-- The breaker store's statements: the breaker keeper's transitions (worker/store/breaker_store.h).
-- Format: see claim_store.sql.
--
-- The breaker: every transition one compare-and-set statement.
--
-- A transition's WHERE names the state it leaves (and, for a probe's answer, the probe's job),
-- so when several nodes try the same transition at once exactly one matches the row; the
-- others update nothing and learn the new state from the NOTIFY. The backlog's first batch
-- moves in the same statement as the state, and the rest in batches after it (ParkBacklog,
-- UnparkBacklog), so that every statement fits in the statement timeout however long the
-- backlog has grown (issue 31). A backlog not yet moved is never sent: the claim parks any job
-- it picks of a channel that does not flow, and the leader parks what waits behind an open
-- breaker and unparks what a closed one left (ParkBehindOpen, ReconcileParked in
-- fleet_store.sql), which also repair the two enqueue races and a node that died between
-- batches. The probe's own transition, open → half_open, is ClaimProbes in claim_store.sql:
-- the runner that sends the probe claims it.
--
-- Every transition sends NOTIFY bulkhead_breakers, '<channel id> <new state>' at commit.

-- fragment: grown_cooldown(base, cap)
-- The cooldown after the n-th opening in a row: base × 2^(n−1), at most the cap. `base` and
-- `cap` are in ms; `breaker_trips` is the count before this opening.
least({{base}}::float8 * power(2, least(breaker_trips, 40)), {{cap}}::float8)
  * interval '1 millisecond'

-- name: OpenBreaker
-- closed → open for channel $1, parking up to $4 of its waiting jobs; the probe may go after $2 ms.
-- param $1 channel bigint
-- param $2 cooldown_ms double precision
-- param $3 reason text
-- param $4 batch bigint
-- column done bigint
-- column jobs bigint
-- column notified bigint
-- Closed → open, parking the channel's waiting backlog (available, at any priority, due or not)
-- in the same statement, up to the batch $4; `jobs` = $4 says there may be more (ParkBacklog).
-- A first opening waits the tier's base cooldown.
WITH opened AS (
  UPDATE bulkhead.channels
     SET breaker_state = 'open', breaker_changed_at = now(),
         breaker_probe_at = now() + $2 * interval '1 millisecond',
         breaker_trips = breaker_trips + 1, breaker_reason = $3
   WHERE id = $1 AND breaker_state = 'closed'
  RETURNING id
), parked AS (
  {{park_backlog(opened, $4)}}
)
SELECT (SELECT count(*) FROM opened) AS done,
       (SELECT count(*) FROM parked) AS jobs,
       (SELECT count(pg_notify('bulkhead_breakers', id || ' open')) FROM opened) AS notified

-- name: CloseBreaker
-- half_open → closed for channel $1 after probe job $2 succeeded, unparking up to $3 jobs.
-- param $1 channel bigint
-- param $2 probe_job bigint
-- param $3 batch bigint
-- column done bigint
-- column jobs bigint
-- column notified bigint
-- column woken bigint
-- Half_open → closed after this probe succeeded, returning the parked backlog to the queue in
-- the same statement, up to the batch $3 (the rest: UnparkBacklog). Unparked jobs keep
-- priority 3 and their scheduled_at:
-- every channel's fresh deliveries (priority 1) still come first, and a retry that was
-- waiting keeps waiting. A paused (or disabled) channel's backlog stays parked until it is
-- resumed.
WITH closed AS (
  UPDATE bulkhead.channels
     SET breaker_state = 'closed', breaker_changed_at = now(), breaker_probe_at = NULL,
         breaker_probe_job = NULL, breaker_trips = 0
   WHERE id = $1 AND breaker_state = 'half_open' AND breaker_probe_job = $2
  RETURNING id, paused, enabled
), unparked AS (
  {{unpark_backlog(closed, closed.enabled AND NOT closed.paused, $3)}}
)
SELECT (SELECT count(*) FROM closed) AS done,
       (SELECT count(*) FROM unparked) AS jobs,
       (SELECT count(pg_notify('bulkhead_breakers', id || ' closed')) FROM closed) AS notified,
       {{wake_queues(unparked)}} AS woken

-- name: ReopenBreaker
-- half_open → open for channel $1 after probe job $2 failed, with the grown cooldown.
-- param $1 channel bigint
-- param $2 probe_job bigint
-- param $3 cooldown_ms double precision
-- param $4 cooldown_max_ms double precision
-- param $5 reason text
-- param $6 batch bigint
-- column done bigint
-- column jobs bigint
-- column notified bigint
-- Half_open → open after this probe failed, with a longer cooldown; parks whatever became
-- available meanwhile, up to the batch $6.
WITH reopened AS (
  UPDATE bulkhead.channels
     SET breaker_state = 'open', breaker_changed_at = now(),
         breaker_probe_at = now() + {{grown_cooldown($3, $4)}},
         breaker_probe_job = NULL, breaker_trips = breaker_trips + 1, breaker_reason = $5
   WHERE id = $1 AND breaker_state = 'half_open' AND breaker_probe_job = $2
  RETURNING id
), parked AS (
  {{park_backlog(reopened, $6)}}
)
SELECT (SELECT count(*) FROM reopened) AS done,
       (SELECT count(*) FROM parked) AS jobs,
       (SELECT count(pg_notify('bulkhead_breakers', id || ' open')) FROM reopened) AS notified

-- name: ParkBacklog
-- Parks up to $2 more waiting jobs of channel $1 while it does not flow; returns jobs.
-- param $1 channel bigint
-- param $2 batch bigint
-- column jobs bigint
-- The rest of a backlog after OpenBreaker or ReopenBreaker. The channel row is read FOR SHARE:
-- a transition in progress is waited for, and a channel that flows again by then (closed by
-- another node, resumed) keeps its jobs.
WITH stopped AS (
  SELECT ch.id FROM bulkhead.channels ch WHERE ch.id = $1 AND NOT {{flowing}} FOR SHARE
), parked AS (
  {{park_backlog(stopped, $2)}}
)
SELECT count(*) AS jobs FROM parked

-- name: UnparkBacklog
-- Unparks up to $2 more parked jobs of channel $1 while it flows; returns jobs.
-- param $1 channel bigint
-- param $2 batch bigint
-- column jobs bigint
-- column woken bigint
-- The rest of a backlog after CloseBreaker, with ParkBacklog's FOR SHARE the other way round:
-- a channel stopped again meanwhile keeps its backlog parked. Wakes the queues it returned jobs to.
WITH restarted AS (
  SELECT ch.id FROM bulkhead.channels ch WHERE ch.id = $1 AND {{flowing}} FOR SHARE
), unparked AS (
  {{unpark_backlog(restarted, true, $2)}}
)
SELECT (SELECT count(*) FROM unparked) AS jobs, {{wake_queues(unparked)}} AS woken

-- name: ExpireProbes
-- half_open → open for queue $1's channels whose probe ran out of time.
-- param $1 queue text
-- param $2 cooldown_ms double precision
-- param $3 cooldown_max_ms double precision
-- column expired bigint
-- Half_open → open for this queue's channels whose probe ran out of time (the
-- prober died, or its answer was lost), with the grown cooldown of a failed probe.
WITH expired AS (
  UPDATE bulkhead.channels AS ch
     SET breaker_state = 'open', breaker_changed_at = now(),
         breaker_probe_at = now() + {{grown_cooldown($2, $3)}},
         breaker_reason = 'probe job ' || ch.breaker_probe_job || ' got no answer in time',
         breaker_probe_job = NULL, breaker_trips = ch.breaker_trips + 1
    FROM bulkhead.tenants AS t
   WHERE t.id = ch.tenant_id AND t.tier = $1
     AND ch.breaker_state = 'half_open' AND ch.breaker_probe_at <= now()
  RETURNING ch.id
)
SELECT count(pg_notify('bulkhead_breakers', id || ' open')) AS expired FROM expired

-- name: NotClosedBreakers
-- The channels whose breaker is not closed, fleet-wide.
-- column id bigint
-- The node's view of the fleet's breakers, refreshed every few seconds
-- in case a NOTIFY was missed. Reads only channels_breaker_due's rows.
SELECT id FROM bulkhead.channels WHERE breaker_state <> 'closed'
