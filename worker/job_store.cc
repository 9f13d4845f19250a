#include "job_store.h"

#include <nlohmann/json.hpp>

namespace bulkhead {
namespace {

// The old secrets of a claimed row's channel that are still in their rotation window, newest
// retired first, space-separated (secrets contain no space); NULL when there is none
// (migration 0004, ADR 0008). The gate `old_secrets_until > now()` is a column of the row the
// claim already has: PostgreSQL evaluates a CASE branch only when it is taken, so the lookup
// (channel_secrets_pkey) runs only for claimed rows of a channel in a rotation, and a fleet
// that never rotates pays one NULL column. The sub-select's own `expires_at > now()` drops
// secrets whose window ended even before the leader prunes them.
// clang-format off
#define BULKHEAD_OLD_SECRETS(row)                                                   \
  "CASE WHEN " row ".old_secrets_until > now() THEN"                                \
  " (SELECT string_agg(s.secret, ' ' ORDER BY s.retired_at DESC, s.secret)"         \
  "    FROM bulkhead.channel_secrets s"                                             \
  "   WHERE s.channel_id = " row ".channel_id AND s.expires_at > now()) END"
// clang-format on

// claim: the heart of the queue.
//
// - One statement, one round trip: it picks and locks, marks the jobs executing with attempt + 1,
//   the node and the time, and RETURNING hands back what the request needs.
// - LIMIT is the runner's free slots, never more: a node holds no job it cannot start now, so
//   other nodes see the rest, and nothing waits in memory.
// - FOR UPDATE SKIP LOCKED: nodes claiming the same queue at once take disjoint rows instead of
//   queueing behind each other's locks.
// - The caps (design §1 invariants 5 and 6). The runner passes what it has in flight per
//   channel ($4, $5) and per tenant ($6, $7) and the caps ($8, $9). Channels and tenants at
//   their cap are left out of every scan, so their jobs take no slot and cost nothing but the
//   index entries stepped over; the rest are ranked per channel and per tenant so that one
//   claim never takes a channel or tenant past its cap. Rows picked beyond a cap stay
//   available (their locks end with the statement).
// - One scan per priority, in priority order, each stopping at the first job not yet due
//   (`scheduled_at <= now()` bounds the index range), so retries waiting for hours never
//   lengthen a claim. Priority 2 and 3 are read only when the fresh jobs did not fill the
//   limit. Each scan reads jobs_claim in order through a window of at most limit + 1000 rows,
//   leaves out what is capped, and locks the rest one by one through the primary key until
//   it has `limit` (a LATERAL: the planner cannot turn it into a hash join or a seq scan, which
//   it would otherwise pick from its low estimate of the cap filters). Rows are read only as
//   far as needed, so an uncapped claim reads `limit` rows.
// - The fresh scan leaves capped channels and tenants out inside its window, not after it:
//   a hanging channel at its cap whose backlog keeps growing at priority 1 would otherwise
//   fill the whole window with rows nobody may take, and every other channel's fresh jobs
//   behind them would wait — measured: healthy p99 992 ms against 16.5 ms while a dead
//   channel's backlog grew for the 2 s before its breaker opened. Stepping over a capped
//   channel's fresh rows costs only while they are fresh: the runner demotes a capped
//   channel's backlog when it reaches its cap and again every second while it stays there
//   (QueueRunner), so at most about a second of its enqueues lies in the fresh range. The
//   demoted and unparked scans keep the filter after their window: a demoted backlog can be
//   100,000 rows, and a capped channel's rows there cost a claim at most the window.
// - Refill ($10): channels this node demoted and still runs get their next jobs through
//   jobs_channel_available, so a busy channel below its cap is refilled even when its jobs lie
//   beyond the window behind another capped channel's backlog.
// - jobs_claim holds only `available` rows, so parked, executing and finished jobs are never
//   in the way however many there are.
// - The breaker is checked here, in the same statement, against the committed channel row:
//   a job picked for a channel whose breaker is not closed, or that is paused, is parked
//   instead of claimed (no attempt spent). That catches the one race parking in one statement
//   leaves open: an enqueue that read the breaker closed and committed just after the park.
// - Rows come back in claim order; parked ones too, so the runner knows how many it took.
constexpr const char* kClaimSql = R"sql(
WITH flying AS (
  SELECT u.channel_id, u.n FROM unnest($4::bigint[], $5::int[]) AS u(channel_id, n)
), tenant_flying AS (
  SELECT u.tenant_id, u.n FROM unnest($6::bigint[], $7::int[]) AS u(tenant_id, n)
), fresh AS (
  SELECT d.*
    FROM (SELECT k.id, k.channel_id, k.tenant_id FROM bulkhead.jobs k
           WHERE k.queue = $1 AND k.state = 'available' AND k.priority = 1
             AND k.scheduled_at <= now()
             AND k.channel_id <> ALL(ARRAY(SELECT channel_id FROM flying WHERE n >= $8))
             AND k.tenant_id <> ALL(ARRAY(SELECT tenant_id FROM tenant_flying WHERE n >= $9))
           ORDER BY k.scheduled_at, k.id
           LIMIT $2 + 1000) AS w
   CROSS JOIN LATERAL (
         SELECT j.id, j.channel_id, j.tenant_id, j.priority, j.scheduled_at
           FROM bulkhead.jobs j
          WHERE j.id = w.id AND j.state = 'available'
            FOR UPDATE SKIP LOCKED) AS d
   LIMIT $2
), demoted AS (
  SELECT d.*
    FROM (SELECT k.id, k.channel_id, k.tenant_id FROM bulkhead.jobs k
           WHERE k.queue = $1 AND k.state = 'available' AND k.priority = 2
             AND k.scheduled_at <= now() AND (SELECT count(*) FROM fresh) < $2
           ORDER BY k.scheduled_at, k.id
           LIMIT $2 + 1000) AS w
   CROSS JOIN LATERAL (
         SELECT j.id, j.channel_id, j.tenant_id, j.priority, j.scheduled_at
           FROM bulkhead.jobs j
          WHERE j.id = w.id AND j.state = 'available'
            FOR UPDATE SKIP LOCKED) AS d
   WHERE w.channel_id <> ALL(ARRAY(SELECT channel_id FROM flying WHERE n >= $8))
     AND w.tenant_id <> ALL(ARRAY(SELECT tenant_id FROM tenant_flying WHERE n >= $9))
   LIMIT $2
), unparked AS (
  SELECT d.*
    FROM (SELECT k.id, k.channel_id, k.tenant_id FROM bulkhead.jobs k
           WHERE k.queue = $1 AND k.state = 'available' AND k.priority = 3
             AND k.scheduled_at <= now()
             AND (SELECT count(*) FROM fresh) + (SELECT count(*) FROM demoted) < $2
           ORDER BY k.scheduled_at, k.id
           LIMIT $2 + 1000) AS w
   CROSS JOIN LATERAL (
         SELECT j.id, j.channel_id, j.tenant_id, j.priority, j.scheduled_at
           FROM bulkhead.jobs j
          WHERE j.id = w.id AND j.state = 'available'
            FOR UPDATE SKIP LOCKED) AS d
   WHERE w.channel_id <> ALL(ARRAY(SELECT channel_id FROM flying WHERE n >= $8))
     AND w.tenant_id <> ALL(ARRAY(SELECT tenant_id FROM tenant_flying WHERE n >= $9))
   LIMIT $2
), refill AS (
  SELECT next.*
    FROM unnest($10::bigint[]) AS c(channel_id)
    LEFT JOIN flying f USING (channel_id)
   CROSS JOIN LATERAL (
         SELECT j.id, j.channel_id, j.tenant_id, j.priority, j.scheduled_at
           FROM bulkhead.jobs j
          WHERE j.channel_id = c.channel_id AND j.state = 'available' AND j.queue = $1
            AND j.scheduled_at <= now()
          ORDER BY j.priority, j.scheduled_at, j.id
          LIMIT greatest(least($8 - coalesce(f.n, 0), $2), 0)
            FOR UPDATE SKIP LOCKED) AS next
), candidates AS (
  SELECT DISTINCT ON (id) *
    FROM (SELECT * FROM fresh UNION ALL SELECT * FROM demoted UNION ALL SELECT * FROM unparked
          UNION ALL SELECT * FROM refill) AS u
), ranked AS (
  SELECT c.*,
         row_number() OVER (PARTITION BY c.channel_id ORDER BY c.priority, c.scheduled_at, c.id)
           + coalesce(f.n, 0) AS channel_n,
         row_number() OVER (PARTITION BY c.tenant_id ORDER BY c.priority, c.scheduled_at, c.id)
           + coalesce(t.n, 0) AS tenant_n
    FROM candidates c
    LEFT JOIN flying f ON f.channel_id = c.channel_id
    LEFT JOIN tenant_flying t ON t.tenant_id = c.tenant_id
), picked AS (
  SELECT id FROM ranked
   WHERE channel_n <= $8 AND tenant_n <= $9
   ORDER BY priority, scheduled_at, id
   LIMIT $2
), claimed AS (
  UPDATE bulkhead.jobs AS j
     SET state = CASE WHEN flow.ok THEN 'executing' ELSE 'parked' END,
         priority = CASE WHEN flow.ok THEN j.priority ELSE 3 END,
         attempt = CASE WHEN flow.ok THEN j.attempt + 1 ELSE j.attempt END,
         attempted_at = CASE WHEN flow.ok THEN now() ELSE j.attempted_at END,
         attempted_by = CASE WHEN flow.ok THEN $3 ELSE j.attempted_by END
    FROM picked, bulkhead.channels AS ch,
         LATERAL (SELECT ch.breaker_state = 'closed' AND NOT ch.paused) AS flow(ok)
   WHERE j.id = picked.id AND ch.id = j.channel_id
  RETURNING j.id, j.channel_id, j.tenant_id, j.attempt, j.max_attempts, j.payload::text,
            ch.url, ch.secret, j.priority, j.scheduled_at, j.state, ch.old_secrets_until
)
SELECT id, channel_id, tenant_id, attempt, max_attempts, payload, url, secret,
       state = 'parked' AS parked,
       -- The queue wait (bulkhead_queue_wait_seconds): from enqueue, or the retry's
       -- scheduled time, to this claim. scheduled_at is set at enqueue and by every retry.
       greatest(extract(epoch FROM now() - scheduled_at), 0)::float8 AS wait_s,
       CASE WHEN state = 'executing' THEN )sql" BULKHEAD_OLD_SECRETS("claimed") R"sql( END
  FROM claimed
 ORDER BY priority, scheduled_at, id
)sql";

// demote_channel: a channel reached its cap on a node: its fresh waiting jobs move behind
// every other channel's fresh ones (priority 1 → 2), in one statement over
// jobs_channel_available. Jobs due later are demoted too: they join the same backlog.
constexpr const char* kDemoteChannelSql = R"sql(
UPDATE bulkhead.jobs
   SET priority = 2
 WHERE channel_id = $1 AND state = 'available' AND priority = 1
)sql";

// demote_tenant: the same for every channel of a tenant that reached its cap, through the
// tenant's channels (channels_tenant) and each channel's available jobs.
constexpr const char* kDemoteTenantSql = R"sql(
UPDATE bulkhead.jobs
   SET priority = 2
 WHERE channel_id IN (SELECT id FROM bulkhead.channels WHERE tenant_id = $1)
   AND state = 'available' AND priority = 1
)sql";

// snooze_channel: an endpoint answered 429 or 503 with a Retry-After: the channel's waiting
// jobs (available, due or not yet) move to no earlier than now() + the delay, in one statement
// over jobs_channel_available. Lengthening only: a job already due later keeps its time (the
// WHERE skips it, so it is not even rewritten). Parked jobs are left alone: they wait for a
// breaker or an operator, which decide when they go. The runner runs it at most once a second
// per channel (QueueRunner), so a busy throttled channel costs one statement a second.
constexpr const char* kSnoozeChannelSql = R"sql(
UPDATE bulkhead.jobs
   SET scheduled_at = now() + $2 * interval '1 millisecond'
 WHERE channel_id = $1 AND state = 'available'
   AND scheduled_at < now() + $2 * interval '1 millisecond'
)sql";

// disable_gone: an endpoint answered 410 Gone: the channel is disabled (enqueue refuses it
// from now on, SQLSTATE 55000 with the reason) and paused, exactly as `bulkhead channel
// disable` does, and in the same statement its waiting backlog is parked and so is the job
// that got the 410 (fenced like record: still executing, ours, at this attempt), with the
// attempt logged but not spent (attempt - 1, as a hand-back): a 410 says the endpoint is gone,
// not that this delivery failed, so its fate is the operator's — `channel enable` and `channel
// resume` send the backlog again with its whole budget, `bulkhead cancel` ends it. Running it
// again (another job of the channel got its 410 meanwhile) keeps the first reason and parks
// that job too. Returns whether this call disabled the channel, and the jobs parked.
constexpr const char* kDisableGoneSql = R"sql(
WITH before AS (
  SELECT id, enabled FROM bulkhead.channels WHERE id = $1::bigint FOR NO KEY UPDATE
), disabled AS (
  UPDATE bulkhead.channels AS ch
     SET enabled = false, paused = true,
         disabled_reason = CASE WHEN before.enabled
                                THEN 'the endpoint answered 410 Gone at '
                                     || to_char(now() AT TIME ZONE 'UTC',
                                                'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                                     || ' (job ' || $2::bigint || ')'
                                ELSE ch.disabled_reason END
    FROM before WHERE ch.id = before.id
  RETURNING ch.id
), answered AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'parked', priority = 3, attempt = j.attempt - 1, last_error = $5::text,
         attempts = CASE WHEN jsonb_array_length(j.attempts) >= 20 THEN j.attempts - 0
                         ELSE j.attempts END
                    || jsonb_build_array(jsonb_build_object(
                         'attempt', j.attempt, 'at', j.attempted_at, 'node', j.attempted_by,
                         'duration_ms', round($6::float8::numeric, 1), 'status', 410, 'error', $5::text))
    FROM before
   WHERE j.id = $2::bigint AND j.channel_id = before.id AND j.state = 'executing'
     AND j.attempted_by = $4::text AND j.attempt = $3::int
  RETURNING 1
), parked AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'parked', priority = 3
    FROM disabled
   WHERE j.channel_id = disabled.id AND j.state = 'available'
  RETURNING 1
)
SELECT before.enabled, (SELECT count(*) FROM parked) + (SELECT count(*) FROM answered),
       (SELECT count(pg_notify('bulkhead_breakers', id || ' paused')) FROM disabled)
  FROM before
)sql";

// record: one statement for a whole batch of results.
//
// The WHERE is the fence: a node finishes a job only while it is still `executing`, claimed by
// this node, at this attempt. A result that arrives after a hand-back, a rescue or another
// claim matches nothing and changes nothing.
//
// Whether a failure retries or discards is decided here, from the row's own attempt and
// max_attempts, not from what the node remembers; a permanent failure (the SSRF guard refused
// the endpoint's address) is discarded whatever attempts remain, since no retry can mend it. The
// retry time is the database's now() plus the node's jittered delay, so clocks of different nodes
// never disagree about it. A failed attempt whose channel's breaker is no longer closed (or that
// was paused meanwhile) waits parked rather than available: attempts in flight when a breaker opens
// end as usual, and their jobs join the parked backlog without spending more of their budget. A
// retry goes to the queue of the tenant's tier now: a tenant moved by set-tier while this attempt
// ran retries in its new tier. The attempt log keeps the newest 20 entries (jsonb - 0 drops the
// oldest).
constexpr const char* kRecordSql = R"sql(
UPDATE bulkhead.jobs AS j
   SET state = CASE WHEN r.delivered THEN 'completed'
                    WHEN j.attempt >= j.max_attempts OR r.permanent THEN 'discarded'
                    WHEN ch.breaker_state <> 'closed' OR ch.paused THEN 'parked'
                    ELSE 'available' END,
       priority = CASE WHEN NOT r.delivered AND NOT r.permanent AND j.attempt < j.max_attempts
                            AND (ch.breaker_state <> 'closed' OR ch.paused) THEN 3
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
       attempts = CASE WHEN jsonb_array_length(j.attempts) >= 20 THEN j.attempts - 0
                       ELSE j.attempts END
                  || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                       'attempt', j.attempt, 'at', j.attempted_at, 'node', j.attempted_by,
                       'duration_ms', round(r.duration_ms::numeric, 1),
                       'status', nullif(r.status, 0), 'error', nullif(r.error, ''))))
  FROM jsonb_to_recordset($1::jsonb) AS r(id bigint, attempt smallint, delivered boolean,
                                          status integer, error text, duration_ms float8,
                                          retry_delay_ms bigint, permanent boolean),
       bulkhead.channels AS ch, bulkhead.tenants AS t
 WHERE j.id = r.id AND j.state = 'executing' AND j.attempted_by = $2 AND j.attempt = r.attempt
   AND ch.id = j.channel_id AND t.id = j.tenant_id
)sql";

// hand_back: claimed but not attempted (or abandoned at shutdown): back to available, the
// attempt not spent, so the job loses none of its retry budget. Fenced like record.
constexpr const char* kHandBackSql = R"sql(
UPDATE bulkhead.jobs AS j
   SET state = 'available', attempt = j.attempt - 1
  FROM jsonb_to_recordset($1::jsonb) AS r(id bigint, attempt smallint)
 WHERE j.id = r.id AND j.state = 'executing' AND j.attempted_by = $2 AND j.attempt = r.attempt
)sql";

// register_tiers: a node makes the tiers it serves known, so tenants can be put on them.
constexpr const char* kRegisterTiersSql = R"sql(
INSERT INTO bulkhead.tiers (name)
SELECT jsonb_array_elements_text($1::jsonb)
ON CONFLICT (name) DO NOTHING
)sql";

// register_node: one row per node name; a restarted node takes its row over.
constexpr const char* kRegisterNodeSql = R"sql(
INSERT INTO bulkhead.nodes (name, host, pid, version, tiers, started_at, heartbeat_at,
                            lease_until)
VALUES ($1, $2, $3, $4, ARRAY(SELECT jsonb_array_elements_text($5::jsonb)), now(), now(),
        now() + $6 * interval '1 millisecond')
ON CONFLICT (name) DO UPDATE
   SET host = EXCLUDED.host, pid = EXCLUDED.pid, version = EXCLUDED.version,
       tiers = EXCLUDED.tiers, started_at = EXCLUDED.started_at,
       heartbeat_at = EXCLUDED.heartbeat_at, lease_until = EXCLUDED.lease_until
)sql";

constexpr const char* kHeartbeatSql = R"sql(
UPDATE bulkhead.nodes
   SET heartbeat_at = now(), lease_until = now() + $2 * interval '1 millisecond'
 WHERE name = $1
)sql";

constexpr const char* kRemoveNodeSql = "DELETE FROM bulkhead.nodes WHERE name = $1";

// ---- Fleet maintenance: run by the leader node only ------------------------------------------

// lead: the fleet's maintenance runs on the one node whose maintenance connection holds this
// session-level advisory lock. The lock dies with the connection, so when the leader's process
// or its connection dies, another node's next try (every few seconds) takes over; no row
// records a leader that a crash could leave behind. The connection names itself after its
// node (application_name), so that depose can tell whose it is.
constexpr const char* kLeadSql = R"sql(
SELECT pg_try_advisory_lock(7094703853087728997)
  FROM (SELECT set_config('application_name', 'bulkhead-maintenance:' || $1, false)) AS me
)sql";

// depose: a leader that is alive to Postgres but not to the fleet — frozen (SIGSTOP, a stalled
// VM), or so cut off that its heartbeat no longer lands — keeps its connection and so the lock.
// When the lock's holder belongs to no node with a running lease, it is terminated, which
// releases the lock for the next try. Its node, if it ever runs again, finds its connection
// gone and competes like any other.
constexpr const char* kDeposeSql = R"sql(
SELECT count(pg_terminate_backend(a.pid))
  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
   AND (l.classid::bigint << 32 | l.objid::bigint) = 7094703853087728997
   AND a.application_name LIKE 'bulkhead-maintenance:%'
   AND NOT EXISTS (SELECT 1 FROM bulkhead.nodes n
                    WHERE a.application_name = 'bulkhead-maintenance:' || n.name
                      AND n.lease_until > now())
)sql";

// rescue_lost: jobs `executing` under a node whose lease has run out (or that has no row at
// all, or that is $1: a node starting under the name of its previous, dead self) go back to
// the queue: `available` at once, keeping the attempt they spent — the request
// may have reached the endpoint, so it counts — or `discarded` if that was their last attempt;
// `parked` if their channel's breaker is not closed or the channel is paused. A result the lost
// node sends later (a zombie that wakes up) is fenced off by record's WHERE (state, node and
// attempt), so it changes nothing.
// The nodes that own executing jobs are found by a skip scan over jobs_executing — one index
// probe per node — so the cost follows the number of nodes, not of jobs in flight.
constexpr const char* kRescueLostSql = R"sql(
WITH RECURSIVE owner(name) AS (
  (SELECT j.attempted_by FROM bulkhead.jobs j
    WHERE j.state = 'executing' ORDER BY j.attempted_by LIMIT 1)
  UNION ALL
  SELECT (SELECT j.attempted_by FROM bulkhead.jobs j
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
  UPDATE bulkhead.jobs AS j
     SET state = CASE WHEN j.attempt >= j.max_attempts THEN 'discarded'
                      WHEN ch.breaker_state <> 'closed' OR ch.paused THEN 'parked'
                      ELSE 'available' END,
         priority = CASE WHEN j.attempt < j.max_attempts
                              AND (ch.breaker_state <> 'closed' OR ch.paused) THEN 3
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
SELECT (SELECT count(*) FROM rescued),
       (SELECT count(*) FROM rescued WHERE state = 'discarded'),
       (SELECT coalesce(string_agg(DISTINCT attempted_by, ','), '') FROM rescued),
       (SELECT count(pg_notify('bulkhead_jobs', queue))
          FROM (SELECT DISTINCT queue FROM rescued WHERE state = 'available') AS woken)
)sql";

// forget_nodes: removes the rows of nodes whose lease ended more than $1 ms ago and that own
// no executing job (rescue ran first), so the registry shows the fleet, not its history.
constexpr const char* kForgetNodesSql = R"sql(
DELETE FROM bulkhead.nodes n
 WHERE n.lease_until < now() - $1 * interval '1 millisecond'
   AND NOT EXISTS (SELECT 1 FROM bulkhead.jobs j
                    WHERE j.state = 'executing' AND j.attempted_by = n.name)
)sql";

// prune_finished: deletes up to $2 jobs that finished (completed, discarded, cancelled) more
// than $1 ms ago, oldest first along jobs_finished. Bounded, so that one run never holds locks
// or bloats WAL for long; the leader repeats it until a batch comes back short.
constexpr const char* kPruneFinishedSql = R"sql(
DELETE FROM bulkhead.jobs
 WHERE id IN (SELECT id FROM bulkhead.jobs
               WHERE state IN ('completed', 'discarded', 'cancelled')
                 AND finished_at < now() - $1 * interval '1 millisecond'
               ORDER BY finished_at, id
               LIMIT $2)
)sql";

// prune_old_secrets: deletes old channel secrets whose rotation window ended, and clears the
// claim's gate (channels.old_secrets_until) of channels whose last old secret has expired,
// through channels_old_secrets_until. The clearing tests the gate on the row as it is when the
// UPDATE reaches it, not on a snapshot: a rotation that moved the gate forward meanwhile keeps
// it. Few rows (rotations are rare), so unbatched. Returns the secrets deleted.
constexpr const char* kPruneOldSecretsSql = R"sql(
WITH pruned AS (
  DELETE FROM bulkhead.channel_secrets WHERE expires_at <= now() RETURNING 1
), cleared AS (
  UPDATE bulkhead.channels SET old_secrets_until = NULL WHERE old_secrets_until <= now()
  RETURNING 1
)
SELECT (SELECT count(*) FROM pruned), (SELECT count(*) FROM cleared)
)sql";

// ---- The breaker: every transition one compare-and-set statement ---------------------------
//
// A transition's WHERE names the state it leaves (and, for a probe's answer, the probe's job),
// so when several nodes try the same transition at once exactly one matches the row; the
// others update nothing and learn the new state from the NOTIFY. The backlog moves in the same
// statement as the state, so no crash can leave an open breaker with its backlog claimable,
// or a closed one with its backlog parked — except through the two enqueue races the claim
// and the reconciler repair (see kClaimSql and kReconcileParkedSql).
//
// Every transition sends NOTIFY bulkhead_breakers, '<channel id> <new state>' at commit.

// open_breaker: closed → open, parking the channel's whole waiting backlog (available, at any
// priority, due or not) in the same statement. A first opening waits the tier's base cooldown.
constexpr const char* kOpenBreakerSql = R"sql(
WITH opened AS (
  UPDATE bulkhead.channels
     SET breaker_state = 'open', breaker_changed_at = now(),
         breaker_probe_at = now() + $2 * interval '1 millisecond',
         breaker_trips = breaker_trips + 1, breaker_reason = $3
   WHERE id = $1 AND breaker_state = 'closed'
  RETURNING id
), parked AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'parked', priority = 3
    FROM opened
   WHERE j.channel_id = opened.id AND j.state = 'available'
  RETURNING 1
)
SELECT (SELECT count(*) FROM opened),
       (SELECT count(*) FROM parked),
       (SELECT count(pg_notify('bulkhead_breakers', id || ' open')) FROM opened)
)sql";

// claim_probes: open → half_open for channels of this queue whose cooldown is over, each with
// its oldest due parked job claimed by this node as the probe. FOR UPDATE SKIP LOCKED on the
// channel row makes the probe fleet-wide: two nodes looking at once take different channels
// or nothing. A channel with no due parked job stays open until a delivery for it waits.
// The probe has until now() + $4 (the request timeout and a margin) to answer; after that any
// node re-opens the breaker (expire_probes), so a hanging probe or a dead prober cannot leave
// it half-open.
constexpr const char* kClaimProbesSql = R"sql(
WITH due AS (
  SELECT ch.id
    FROM bulkhead.channels ch JOIN bulkhead.tenants t ON t.id = ch.tenant_id
   WHERE ch.breaker_state = 'open' AND ch.breaker_probe_at <= now() AND t.tier = $1
     AND ch.enabled AND NOT ch.paused
   ORDER BY ch.breaker_probe_at
   LIMIT $2
     FOR UPDATE OF ch SKIP LOCKED
), chosen AS (
  SELECT due.id AS channel_id, probe.id AS job_id
    FROM due
   CROSS JOIN LATERAL (
         SELECT j.id
           FROM bulkhead.jobs j
          WHERE j.channel_id = due.id AND j.state = 'parked' AND j.scheduled_at <= now()
          ORDER BY j.scheduled_at, j.id
          LIMIT 1
            FOR UPDATE SKIP LOCKED) AS probe
), probing AS (
  UPDATE bulkhead.channels AS ch
     SET breaker_state = 'half_open', breaker_changed_at = now(),
         breaker_probe_at = now() + $4 * interval '1 millisecond',
         breaker_probe_job = chosen.job_id
    FROM chosen
   WHERE ch.id = chosen.channel_id
  RETURNING ch.id, pg_notify('bulkhead_breakers', ch.id || ' half_open')
), claimed AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'executing', attempt = j.attempt + 1, attempted_at = now(), attempted_by = $3
    FROM chosen, bulkhead.channels AS ch
   WHERE j.id = chosen.job_id AND ch.id = j.channel_id
  RETURNING j.id, j.channel_id, j.tenant_id, j.attempt, j.max_attempts, j.payload::text,
            ch.url, ch.secret, ch.old_secrets_until
)
SELECT claimed.id, claimed.channel_id, claimed.tenant_id, claimed.attempt, claimed.max_attempts,
       claimed.payload, claimed.url, claimed.secret,
       )sql" BULKHEAD_OLD_SECRETS("claimed") R"sql(,
       (SELECT count(*) FROM probing)
  FROM claimed
)sql";

// close_breaker: half_open → closed after this probe succeeded, returning the parked backlog
// to the queue in the same statement. Unparked jobs keep priority 3 and their scheduled_at:
// every channel's fresh deliveries (priority 1) still come first, and a retry that was
// waiting keeps waiting. A paused channel's backlog stays parked until it is resumed.
constexpr const char* kCloseBreakerSql = R"sql(
WITH closed AS (
  UPDATE bulkhead.channels
     SET breaker_state = 'closed', breaker_changed_at = now(), breaker_probe_at = NULL,
         breaker_probe_job = NULL, breaker_trips = 0
   WHERE id = $1 AND breaker_state = 'half_open' AND breaker_probe_job = $2
  RETURNING id, paused
), unparked AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'available'
    FROM closed
   WHERE j.channel_id = closed.id AND j.state = 'parked' AND NOT closed.paused
  RETURNING j.queue
)
SELECT (SELECT count(*) FROM closed),
       (SELECT count(*) FROM unparked),
       (SELECT count(pg_notify('bulkhead_breakers', id || ' closed')) FROM closed),
       (SELECT count(pg_notify('bulkhead_jobs', queue))
          FROM (SELECT DISTINCT queue FROM unparked) AS woken)
)sql";

// The cooldown after the n-th opening in a row: base × 2^(n−1), at most the cap. $c is the
// base and $m the cap in ms; `trips` is the count before this opening.
#define BULKHEAD_GROWN_COOLDOWN(c, m)                            \
  "least(" c "::float8 * power(2, least(breaker_trips, 40)), " m \
  "::float8)"                                                    \
  " * interval '1 millisecond'"

// reopen_breaker: half_open → open after this probe failed, with a longer cooldown; parks
// whatever became available meanwhile.
constexpr const char* kReopenBreakerSql = R"sql(
WITH reopened AS (
  UPDATE bulkhead.channels
     SET breaker_state = 'open', breaker_changed_at = now(),
         breaker_probe_at = now() + )sql" BULKHEAD_GROWN_COOLDOWN("$3", "$4") R"sql(,
         breaker_probe_job = NULL, breaker_trips = breaker_trips + 1, breaker_reason = $5
   WHERE id = $1 AND breaker_state = 'half_open' AND breaker_probe_job = $2
  RETURNING id
), parked AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'parked', priority = 3
    FROM reopened
   WHERE j.channel_id = reopened.id AND j.state = 'available'
  RETURNING 1
)
SELECT (SELECT count(*) FROM reopened),
       (SELECT count(*) FROM parked),
       (SELECT count(pg_notify('bulkhead_breakers', id || ' open')) FROM reopened)
)sql";

// expire_probes: half_open → open for this queue's channels whose probe ran out of time (the
// prober died, or its answer was lost), with the grown cooldown of a failed probe.
constexpr const char* kExpireProbesSql = R"sql(
WITH expired AS (
  UPDATE bulkhead.channels AS ch
     SET breaker_state = 'open', breaker_changed_at = now(),
         breaker_probe_at = now() + )sql" BULKHEAD_GROWN_COOLDOWN("$2", "$3") R"sql(,
         breaker_reason = 'probe job ' || ch.breaker_probe_job || ' got no answer in time',
         breaker_probe_job = NULL, breaker_trips = ch.breaker_trips + 1
    FROM bulkhead.tenants AS t
   WHERE t.id = ch.tenant_id AND t.tier = $1
     AND ch.breaker_state = 'half_open' AND ch.breaker_probe_at <= now()
  RETURNING ch.id
)
SELECT count(pg_notify('bulkhead_breakers', id || ' open')) FROM expired
)sql";

#undef BULKHEAD_GROWN_COOLDOWN

// reconcile_parked: unparks the jobs of channels that are closed and not paused. They strand
// there when an enqueue read the breaker open (or the channel paused) and committed after the
// statement that closed it; or when an operator closed a breaker by hand in SQL.
// A skip scan over jobs_parked finds the channels that have parked jobs at one index probe
// per such channel, so the cost does not grow with the number of parked rows. The channel row
// is locked SKIP LOCKED: a channel in the middle of a transition is left for the next round.
constexpr const char* kReconcileParkedSql = R"sql(
WITH RECURSIVE parked_channel(id) AS (
  (SELECT j.channel_id FROM bulkhead.jobs j
    WHERE j.state = 'parked' ORDER BY j.channel_id LIMIT 1)
  UNION ALL
  SELECT (SELECT j.channel_id FROM bulkhead.jobs j
           WHERE j.state = 'parked' AND j.channel_id > p.id ORDER BY j.channel_id LIMIT 1)
    FROM parked_channel p
   WHERE p.id IS NOT NULL
), stranded AS (
  SELECT ch.id
    FROM parked_channel p JOIN bulkhead.channels ch ON ch.id = p.id
   WHERE ch.breaker_state = 'closed' AND NOT ch.paused
     FOR NO KEY UPDATE OF ch SKIP LOCKED
), unparked AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'available'
    FROM stranded
   WHERE j.channel_id = stranded.id AND j.state = 'parked'
  RETURNING j.channel_id, j.queue
)
SELECT (SELECT count(*) FROM unparked),
       (SELECT count(DISTINCT channel_id) FROM unparked),
       (SELECT count(pg_notify('bulkhead_jobs', queue))
          FROM (SELECT DISTINCT queue FROM unparked) AS woken)
)sql";

// park_behind_open: parks the available jobs of every channel whose breaker is not closed.
// They get there when an enqueue read the breaker closed and committed after the statement
// that opened it — about a thousand jobs when a 10-client backlog is being created as the
// breaker opens. The claim would park them too, but only once a slot is free, and a hanging
// endpoint holds its slots for the whole request timeout; this runs every second. It reads
// only the broken channels (channels_breaker_due) and their available jobs.
constexpr const char* kParkBehindOpenSql = R"sql(
WITH parked AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'parked', priority = 3
    FROM bulkhead.channels ch
   WHERE ch.breaker_state <> 'closed' AND j.channel_id = ch.id AND j.state = 'available'
  RETURNING j.channel_id
)
SELECT count(*), count(DISTINCT channel_id) FROM parked
)sql";

// not_closed_breakers: the node's view of the fleet's breakers, refreshed every few seconds
// in case a NOTIFY was missed. Reads only channels_breaker_due's rows.
constexpr const char* kNotClosedBreakersSql = R"sql(
SELECT id FROM bulkhead.channels WHERE breaker_state <> 'closed'
)sql";

// ---- The leader's samples for the metrics (bulkhead_jobs, _breakers, _queue_lag_seconds) ----
//
// Run by the maintenance leader every 15 s, never per scrape. Each reads one partial index's
// rows only — the waiting, executing and not-closed — so finished jobs, however many, are
// never read: the cost grows with the backlog (a million parked rows: ~0.2 s every 15 s on
// one node of the fleet), not with the table. Every tier comes back, with 0 for an empty
// state, so a series does not vanish when its count reaches 0.

// sample_jobs: jobs per queue in the waiting and running states. `available` is what can be
// claimed now; `scheduled` is available but not yet due (retries waiting); read on jobs_claim,
// jobs_parked and jobs_executing respectively.
constexpr const char* kSampleJobsSql = R"sql(
WITH counts AS (
  SELECT j.queue, CASE WHEN j.scheduled_at <= now() THEN 'available' ELSE 'scheduled' END AS s,
         count(*) AS n
    FROM bulkhead.jobs j WHERE j.state = 'available' GROUP BY 1, 2
  UNION ALL
  SELECT j.queue, 'parked', count(*) FROM bulkhead.jobs j WHERE j.state = 'parked' GROUP BY 1
  UNION ALL
  SELECT j.queue, 'executing', count(*) FROM bulkhead.jobs j WHERE j.state = 'executing'
   GROUP BY 1
)
SELECT t.name, s.state, coalesce(c.n, 0)
  FROM bulkhead.tiers t
 CROSS JOIN (VALUES ('available'), ('scheduled'), ('parked'), ('executing')) AS s(state)
  LEFT JOIN counts c ON c.queue = t.name AND c.s = s.state
 ORDER BY 1, 2
)sql";

// sample_breakers: channels per tier whose breaker is open or half-open (on
// channels_breaker_due); closed is the rest and is not counted, which would read every channel.
constexpr const char* kSampleBreakersSql = R"sql(
WITH counts AS (
  SELECT te.tier, ch.breaker_state AS s, count(*) AS n
    FROM bulkhead.channels ch JOIN bulkhead.tenants te ON te.id = ch.tenant_id
   WHERE ch.breaker_state <> 'closed'
   GROUP BY 1, 2
)
SELECT t.name, s.state, coalesce(c.n, 0)
  FROM bulkhead.tiers t
 CROSS JOIN (VALUES ('open'), ('half_open')) AS s(state)
  LEFT JOIN counts c ON c.tier = t.name AND c.s = s.state
 ORDER BY 1, 2
)sql";

// sample_lag: per tier, the age of its oldest claimable job (available and due), 0 when none:
// one jobs_claim probe per priority (the index's order is priority first, so the oldest of
// each priority is its first due row).
constexpr const char* kSampleLagSql = R"sql(
SELECT t.name,
       coalesce(greatest(extract(epoch FROM now() - min(o.scheduled_at)), 0), 0)::float8
  FROM bulkhead.tiers t
 CROSS JOIN (VALUES (1), (2), (3)) AS p(priority)
  LEFT JOIN LATERAL (
        SELECT j.scheduled_at FROM bulkhead.jobs j
         WHERE j.queue = t.name AND j.state = 'available' AND j.priority = p.priority
           AND j.scheduled_at <= now()
         ORDER BY j.scheduled_at LIMIT 1) AS o ON true
 GROUP BY t.name
 ORDER BY 1
)sql";

// ---- Operators' statements (bulkhead breakers, breaker reset, channel pause | resume) -------

// breakers: every channel that is not simply flowing — breaker not closed, or paused — with
// its parked backlog (counted on jobs_parked). Broken breakers first, longest broken first.
constexpr const char* kListBreakersSql = R"sql(
SELECT ch.id, t.name, t.tier, ch.breaker_state, ch.paused,
       to_char(ch.breaker_changed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       extract(epoch FROM now() - ch.breaker_changed_at)::float8,
       ch.breaker_trips, coalesce(ch.breaker_reason, ''),
       coalesce(extract(epoch FROM ch.breaker_probe_at - now())::float8, 0),
       coalesce(ch.breaker_probe_job, 0),
       (SELECT count(*) FROM bulkhead.jobs j WHERE j.channel_id = ch.id AND j.state = 'parked')
  FROM bulkhead.channels ch JOIN bulkhead.tenants t ON t.id = ch.tenant_id
 WHERE ch.breaker_state <> 'closed' OR ch.paused
 ORDER BY ch.breaker_state = 'closed', ch.breaker_changed_at, ch.id
)sql";

// breaker_reset: an operator closes a channel's breaker from any state and returns its parked
// backlog (unless the channel is paused), in one statement. A probe still in flight then
// answers into a closed breaker, and its compare-and-set matches nothing. On a breaker that
// was closed already it only unparks what may have stranded, keeping breaker_changed_at.
constexpr const char* kResetBreakerSql = R"sql(
WITH before AS (
  SELECT id, breaker_state FROM bulkhead.channels WHERE id = $1 FOR NO KEY UPDATE
), reset AS (
  UPDATE bulkhead.channels AS ch
     SET breaker_state = 'closed', breaker_probe_at = NULL, breaker_probe_job = NULL,
         breaker_trips = 0,
         breaker_changed_at = CASE WHEN before.breaker_state = 'closed'
                                   THEN ch.breaker_changed_at ELSE now() END
    FROM before
   WHERE ch.id = before.id
  RETURNING ch.id, ch.paused
), unparked AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'available'
    FROM reset
   WHERE j.channel_id = reset.id AND j.state = 'parked' AND NOT reset.paused
  RETURNING j.queue
)
SELECT before.breaker_state,
       (SELECT count(*) FROM unparked),
       (SELECT count(pg_notify('bulkhead_breakers', id || ' closed')) FROM reset),
       (SELECT count(pg_notify('bulkhead_jobs', queue))
          FROM (SELECT DISTINCT queue FROM unparked) AS woken)
  FROM before
)sql";

// set_tenant_tier: moves a tenant (by name, or by id when no tenant has that name) to another
// tier, and its waiting jobs (available and parked) to that tier's queue, in one statement;
// jobs in flight finish where they are, and retry in the new queue (see record). A tier that
// does not exist fails on tenants.tier's foreign key (23503). Wakes the new queue's nodes.
constexpr const char* kSetTenantTierSql = R"sql(
WITH tenant AS (
  SELECT t.id, t.name, t.tier FROM bulkhead.tenants t
   WHERE t.name = $1
      OR (t.id::text = $1 AND NOT EXISTS (SELECT 1 FROM bulkhead.tenants WHERE name = $1))
     FOR NO KEY UPDATE
), moved AS (
  UPDATE bulkhead.tenants AS t SET tier = $2 FROM tenant WHERE t.id = tenant.id RETURNING t.id
), jobs_moved AS (
  UPDATE bulkhead.jobs AS j
     SET queue = $2
    FROM bulkhead.channels ch, moved
   WHERE ch.tenant_id = moved.id AND j.channel_id = ch.id
     AND j.state IN ('available', 'parked') AND j.queue <> $2
  RETURNING j.state
)
SELECT tenant.name, tenant.tier,
       (SELECT count(*) FROM jobs_moved WHERE state = 'available'),
       (SELECT count(*) FROM jobs_moved WHERE state = 'parked'),
       (SELECT count(*) FROM moved, pg_notify('bulkhead_jobs', $2))
  FROM tenant
)sql";

// pause_channel: holds a channel's deliveries: its waiting backlog is parked in the same
// statement, and bulkhead.enqueue inserts its new ones parked, until it is resumed.
constexpr const char* kPauseChannelSql = R"sql(
WITH before AS (
  SELECT id, paused FROM bulkhead.channels WHERE id = $1 FOR NO KEY UPDATE
), paused AS (
  UPDATE bulkhead.channels AS ch SET paused = true FROM before WHERE ch.id = before.id
  RETURNING ch.id
), parked AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'parked', priority = 3
    FROM paused
   WHERE j.channel_id = paused.id AND j.state = 'available'
  RETURNING 1
)
SELECT before.paused, (SELECT count(*) FROM parked),
       (SELECT count(pg_notify('bulkhead_breakers', id || ' paused')) FROM paused)
  FROM before
)sql";

// resume_channel: lifts the hold; the parked backlog returns to the queue if the breaker is
// closed (an open breaker keeps it parked until its probe succeeds).
constexpr const char* kResumeChannelSql = R"sql(
WITH before AS (
  SELECT id, paused FROM bulkhead.channels WHERE id = $1 FOR NO KEY UPDATE
), resumed AS (
  UPDATE bulkhead.channels AS ch SET paused = false FROM before WHERE ch.id = before.id
  RETURNING ch.id, ch.breaker_state
), unparked AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'available'
    FROM resumed
   WHERE j.channel_id = resumed.id AND j.state = 'parked' AND resumed.breaker_state = 'closed'
  RETURNING j.queue
)
SELECT before.paused, (SELECT count(*) FROM unparked),
       (SELECT count(pg_notify('bulkhead_breakers', id || ' resumed')) FROM resumed),
       (SELECT count(pg_notify('bulkhead_jobs', queue))
          FROM (SELECT DISTINCT queue FROM unparked) AS woken)
  FROM before
)sql";

// ---- Operators' statements of the admin CLI (bulkhead status, jobs, replay, cancel, channel
// add | show | disable | enable, tenant add | show) --------------------------------------------
//
// Each runs once per command, so it is planned with its parameters (a custom plan): the
// `$n IS NULL OR …` filters fold away and the indexes of the remaining filters are used.

#define BULKHEAD_UTC(column) \
  "to_char(" column " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

// queue_status: per tier, its waiting jobs by state and its lag (the age of the oldest due
// available job: the first entry of each priority's range in jobs_claim). Every count reads
// only a partial index of unfinished rows (jobs_claim, jobs_executing, jobs_parked), so its
// cost follows the backlog and never the finished history.
constexpr const char* kQueueStatusSql = R"sql(
SELECT q.name,
       (SELECT count(*) FROM bulkhead.jobs j
         WHERE j.queue = q.name AND j.state = 'available' AND j.scheduled_at <= now()),
       (SELECT count(*) FROM bulkhead.jobs j
         WHERE j.queue = q.name AND j.state = 'available' AND j.scheduled_at > now()),
       (SELECT count(*) FROM bulkhead.jobs j WHERE j.queue = q.name AND j.state = 'executing'),
       (SELECT count(*) FROM bulkhead.jobs j WHERE j.queue = q.name AND j.state = 'parked'),
       coalesce(extract(epoch FROM now() - (
         SELECT min(first.scheduled_at)
           FROM generate_series(1, 3) AS p(priority)
          CROSS JOIN LATERAL (
                SELECT j.scheduled_at FROM bulkhead.jobs j
                 WHERE j.queue = q.name AND j.state = 'available' AND j.priority = p.priority
                   AND j.scheduled_at <= now()
                 ORDER BY j.scheduled_at LIMIT 1) AS first))::float8, 0)
  FROM bulkhead.tiers q
 ORDER BY q.name
)sql";

// node_status: the registered nodes, their heartbeat and lease, and the jobs each holds in
// flight (jobs_executing, one index range per node).
constexpr const char* kNodeStatusSql = R"sql(
SELECT n.name, coalesce(n.host, ''), coalesce(n.version, ''), array_to_string(n.tiers, ','),
       coalesce(n.pid, 0),
       extract(epoch FROM now() - n.heartbeat_at)::float8,
       extract(epoch FROM n.lease_until - now())::float8,
       (SELECT count(*) FROM bulkhead.jobs j
         WHERE j.state = 'executing' AND j.attempted_by = n.name)
  FROM bulkhead.nodes n
 ORDER BY n.name
)sql";

// list_jobs: the newest jobs first (the primary key walked backwards), filtered by channel,
// tenant and state, at most $4. The payload is never read out, only its size; the last error
// is cut to 200 characters. A filter that matches few of many rows walks far: the command
// bounds it with a statement timeout.
constexpr const char* kListJobsSql = R"sql(
SELECT j.id, j.queue, coalesce(t.name, j.tenant_id::text), j.state, j.channel_id, j.priority,
       j.attempt, j.max_attempts, )sql" BULKHEAD_UTC("j.created_at") R"sql(,
       )sql" BULKHEAD_UTC("j.scheduled_at") R"sql(,
       coalesce()sql" BULKHEAD_UTC("j.finished_at") R"sql(, ''),
       pg_column_size(j.payload)::bigint, coalesce(left(j.last_error, 200), '')
  FROM bulkhead.jobs j LEFT JOIN bulkhead.tenants t ON t.id = j.tenant_id
 WHERE ($1::bigint IS NULL OR j.channel_id = $1)
   AND ($2::bigint IS NULL OR j.tenant_id = $2)
   AND ($3::text IS NULL OR j.state = $3)
 ORDER BY j.id DESC
 LIMIT $4
)sql";

// replay: discarded jobs back to the queue, oldest discarded first, at most $8 of them
// (jobs_finished walked from $4/$5 on; by id through the primary key). Each gets a fresh
// attempt budget (attempt 0 of its max_attempts), is due now, goes to the queue of its
// tenant's tier now, and waits behind every channel's fresh deliveries (priority 3, as an
// unparked backlog) so that a large replay cannot starve them. A job whose channel's breaker
// is not closed, or that is paused (a disabled channel is), is replayed parked. Its attempt
// log and last error stay as history. One more row than the limit is locked to tell whether
// more remain. Wakes the queues that got available jobs.
constexpr const char* kReplaySql = R"sql(
WITH picked AS (
  SELECT j.id, j.finished_at FROM bulkhead.jobs j
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
  UPDATE bulkhead.jobs AS j
     SET state = CASE WHEN flow.ok THEN 'available' ELSE 'parked' END,
         priority = 3, attempt = 0, finished_at = NULL, scheduled_at = now(), queue = t.tier
    FROM chosen, bulkhead.channels AS ch, bulkhead.tenants AS t,
         LATERAL (SELECT ch.breaker_state = 'closed' AND NOT ch.paused) AS flow(ok)
   WHERE j.id = chosen.id AND ch.id = j.channel_id AND t.id = j.tenant_id
  RETURNING j.state, j.queue
)
SELECT (SELECT count(*) FROM replayed),
       (SELECT count(*) FROM replayed WHERE state = 'available'),
       (SELECT count(*) FROM replayed WHERE state = 'parked'),
       (SELECT count(*) FROM picked) > $8,
       (SELECT count(pg_notify('bulkhead_jobs', queue))
          FROM (SELECT DISTINCT queue FROM replayed WHERE state = 'available') AS woken)
)sql";

// cancel: waiting jobs (available, due or not, and parked) to cancelled, at most $4, by id or
// by channel (jobs_channel_available, jobs_parked) or tenant (its channels, then the same).
// A job in flight is not waiting and is left alone: its attempt finishes and is recorded as
// usual. Rows another session holds (a claim taking them right now) are skipped.
constexpr const char* kCancelSql = R"sql(
WITH picked AS (
  SELECT j.id FROM bulkhead.jobs j
   WHERE j.state IN ('available', 'parked')
     AND ($1::bigint IS NULL OR j.id = $1)
     AND ($2::bigint IS NULL OR j.channel_id = $2)
     AND ($3::bigint IS NULL
          OR j.channel_id IN (SELECT ch.id FROM bulkhead.channels ch WHERE ch.tenant_id = $3))
   LIMIT $4 + 1
     FOR UPDATE SKIP LOCKED
), chosen AS (
  SELECT id FROM picked LIMIT $4
), cancelled AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'cancelled', finished_at = now()
    FROM chosen
   WHERE j.id = chosen.id
  RETURNING 1
)
SELECT (SELECT count(*) FROM cancelled), (SELECT count(*) FROM picked) > $4
)sql";

// find_job: one job's state and owner, to explain a cancel that changed nothing.
constexpr const char* kFindJobSql = R"sql(
SELECT state, coalesce(attempted_by, ''), attempt FROM bulkhead.jobs WHERE id = $1
)sql";

// add_channel: a new channel of a tenant (by name, or by id when no tenant has that name),
// with a secret from bulkhead.new_secret(). The URL's shape is checked by channels_url_is_http.
constexpr const char* kAddChannelSql = R"sql(
WITH tenant AS (
  SELECT t.id, t.name, t.tier FROM bulkhead.tenants t
   WHERE t.name = $1
      OR (t.id::text = $1 AND NOT EXISTS (SELECT 1 FROM bulkhead.tenants WHERE name = $1))
), added AS (
  INSERT INTO bulkhead.channels (tenant_id, url) SELECT id, $2 FROM tenant
  RETURNING id, secret
)
SELECT added.id, tenant.name, tenant.tier, added.secret FROM added, tenant
)sql";

// show_channel: one channel, never its secret, with its waiting jobs by state (the channel's
// ranges of jobs_channel_available and jobs_parked; in flight through jobs_executing).
constexpr const char* kShowChannelSql = R"sql(
SELECT ch.id, t.id, t.name, t.tier, ch.url, )sql" BULKHEAD_UTC("ch.created_at") R"sql(,
       ch.enabled, ch.paused, coalesce(ch.disabled_reason, ''), ch.breaker_state,
       coalesce(ch.breaker_reason, ''), ch.breaker_trips,
       (SELECT count(*) FROM bulkhead.jobs j
         WHERE j.channel_id = ch.id AND j.state = 'available' AND j.scheduled_at <= now()),
       (SELECT count(*) FROM bulkhead.jobs j
         WHERE j.channel_id = ch.id AND j.state = 'available' AND j.scheduled_at > now()),
       (SELECT count(*) FROM bulkhead.jobs j WHERE j.channel_id = ch.id AND j.state = 'executing'),
       (SELECT count(*) FROM bulkhead.jobs j WHERE j.channel_id = ch.id AND j.state = 'parked'),
       old.n, coalesce()sql" BULKHEAD_UTC("old.until") R"sql(, '')
  FROM bulkhead.channels ch JOIN bulkhead.tenants t ON t.id = ch.tenant_id,
       LATERAL (SELECT count(*) AS n, max(s.expires_at) AS until
                  FROM bulkhead.channel_secrets s
                 WHERE s.channel_id = ch.id AND s.expires_at > now()) AS old
 WHERE ch.id = $1
)sql";

// ---- rotate-secret: one transaction of four statements, in this order -------------------
//
// rotate_lock: locks the channel's row for the rotation (a second rotation of the same channel
// waits) and says whether the given new secret ($2, '' when one is to be generated) is already
// the current one. No row: no such channel. The secrets are compared here, never read out.
constexpr const char* kRotateLockSql = R"sql(
SELECT secret = $2 FROM bulkhead.channels WHERE id = $1 FOR NO KEY UPDATE
)sql";

// rotate_drop: deletes the channel's old secrets that are expired, that equal the new secret
// ($3; it becomes current again), or all of them when the window ($2 seconds) is 0.
constexpr const char* kRotateDropSql = R"sql(
DELETE FROM bulkhead.channel_secrets
 WHERE channel_id = $1 AND ($2 = 0 OR expires_at <= now() OR secret = $3)
)sql";

// rotate_retire: the current secret becomes an old one, valid for $2 seconds more (> 0).
constexpr const char* kRotateRetireSql = R"sql(
INSERT INTO bulkhead.channel_secrets (channel_id, secret, expires_at)
SELECT id, secret, now() + $2 * interval '1 second' FROM bulkhead.channels WHERE id = $1
ON CONFLICT (channel_id, secret) DO UPDATE
   SET retired_at = now(),
       expires_at = greatest(bulkhead.channel_secrets.expires_at, excluded.expires_at)
)sql";

// rotate_set: the new current secret ($2, or bulkhead.new_secret() when ''), checked by
// channels_secret_format, and the claim's gate recomputed from the old secrets left. Returns
// the new secret (for the operator, once), how many old secrets stay valid, and until when.
constexpr const char* kRotateSetSql = R"sql(
UPDATE bulkhead.channels AS ch
   SET secret = coalesce(nullif($2, ''), bulkhead.new_secret()),
       old_secrets_until = (SELECT max(s.expires_at) FROM bulkhead.channel_secrets s
                             WHERE s.channel_id = ch.id)
 WHERE ch.id = $1
RETURNING ch.secret,
          (SELECT count(*) FROM bulkhead.channel_secrets s WHERE s.channel_id = ch.id),
          coalesce()sql" BULKHEAD_UTC("ch.old_secrets_until") R"sql(, '')
)sql";

// disable_channel: enqueue refuses the channel from now on (bulkhead.route), and its waiting
// backlog is held parked, not dropped: a disabled channel is also paused, so the claim, the
// probe and the reconciler all leave its jobs alone without a new check of their own. Parks in
// the same statement, like pause_channel.
constexpr const char* kDisableChannelSql = R"sql(
WITH before AS (
  SELECT id, enabled FROM bulkhead.channels WHERE id = $1 FOR NO KEY UPDATE
), disabled AS (
  UPDATE bulkhead.channels AS ch SET enabled = false, disabled_reason = $2, paused = true
    FROM before WHERE ch.id = before.id
  RETURNING ch.id
), parked AS (
  UPDATE bulkhead.jobs AS j
     SET state = 'parked', priority = 3
    FROM disabled
   WHERE j.channel_id = disabled.id AND j.state = 'available'
  RETURNING 1
)
SELECT before.enabled, (SELECT count(*) FROM parked),
       (SELECT count(pg_notify('bulkhead_breakers', id || ' paused')) FROM disabled)
  FROM before
)sql";

// enable_channel: enqueue accepts the channel again. The pause that disable set stays, so the
// parked backlog is sent only when an operator resumes the channel (it may be stale by now).
constexpr const char* kEnableChannelSql = R"sql(
WITH before AS (
  SELECT id, enabled FROM bulkhead.channels WHERE id = $1 FOR NO KEY UPDATE
), enabled AS (
  UPDATE bulkhead.channels AS ch SET enabled = true, disabled_reason = NULL
    FROM before WHERE ch.id = before.id
  RETURNING ch.id
)
SELECT before.enabled,
       (SELECT count(*) FROM bulkhead.jobs j, enabled
         WHERE j.channel_id = enabled.id AND j.state = 'parked')
  FROM before
)sql";

constexpr const char* kAddTenantSql = R"sql(
INSERT INTO bulkhead.tenants (name, tier) VALUES ($1, $2) RETURNING id
)sql";

// show_tenant: one tenant (by name, or by id when no tenant has that name) with its channels
// and its waiting jobs by state, found through its channels (channels_tenant, then each
// channel's ranges of jobs_channel_available and jobs_parked).
constexpr const char* kShowTenantSql = R"sql(
WITH tenant AS (
  SELECT t.* FROM bulkhead.tenants t
   WHERE t.name = $1
      OR (t.id::text = $1 AND NOT EXISTS (SELECT 1 FROM bulkhead.tenants WHERE name = $1))
), channel AS (
  SELECT ch.id FROM bulkhead.channels ch, tenant WHERE ch.tenant_id = tenant.id
)
SELECT tenant.id, tenant.name, tenant.tier, )sql" BULKHEAD_UTC("tenant.created_at") R"sql(,
       (SELECT count(*) FROM channel),
       (SELECT count(*) FROM bulkhead.jobs j
         WHERE j.channel_id IN (SELECT id FROM channel) AND j.state = 'available'
           AND j.scheduled_at <= now()),
       (SELECT count(*) FROM bulkhead.jobs j
         WHERE j.channel_id IN (SELECT id FROM channel) AND j.state = 'available'
           AND j.scheduled_at > now()),
       (SELECT count(*) FROM bulkhead.jobs j
         WHERE j.tenant_id = tenant.id AND j.state = 'executing'),
       (SELECT count(*) FROM bulkhead.jobs j
         WHERE j.channel_id IN (SELECT id FROM channel) AND j.state = 'parked')
  FROM tenant
)sql";

#undef BULKHEAD_UTC
#undef BULKHEAD_OLD_SECRETS

template <typename T>
int Written(const T& result) {
  return static_cast<int>(result.affected_rows());
}

// A row of claim or claim_probes: id, channel_id, tenant_id, attempt, max_attempts, payload,
// url, secret, and at `old_secrets` the space-separated old secrets (NULL: none).
ClaimedJob ClaimedFromRow(const pqxx::row& row, int old_secrets) {
  ClaimedJob job;
  job.id = row[0].as<int64_t>();
  job.channel_id = row[1].as<int64_t>();
  job.tenant_id = row[2].as<int64_t>();
  job.attempt = row[3].as<int>();
  job.max_attempts = row[4].as<int>();
  job.payload = row[5].as<std::string>();
  job.url = row[6].as<std::string>();
  job.secret = row[7].as<std::string>();
  const pqxx::field old = row[old_secrets];
  if (!old.is_null()) {
    std::string_view rest = old.c_str();
    while (!rest.empty()) {
      size_t space = rest.find(' ');
      job.old_secrets.emplace_back(rest.substr(0, space));
      if (space == std::string_view::npos) break;
      rest.remove_prefix(space + 1);
    }
  }
  return job;
}

// A PostgreSQL array literal of integers: {1,2,3}.
std::string PgArray(const std::vector<int64_t>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(items[i]);
  }
  out += '}';
  return out;
}

// The first row of a transition statement: (rows transitioned, jobs moved, …).
BreakerTransition TransitionFromRow(const pqxx::row& row) {
  return {row[0].as<int64_t>() > 0, row[1].as<int64_t>()};
}

}  // namespace

JobStore::JobStore(pqxx::connection_base& conn) : conn_(conn) {
  conn_.prepare("claim", kClaimSql);
  conn_.prepare("record", kRecordSql);
  conn_.prepare("demote_channel", kDemoteChannelSql);
  conn_.prepare("demote_tenant", kDemoteTenantSql);
  conn_.prepare("snooze_channel", kSnoozeChannelSql);
  conn_.prepare("disable_gone", kDisableGoneSql);
  conn_.prepare("hand_back", kHandBackSql);
  conn_.prepare("register_tiers", kRegisterTiersSql);
  conn_.prepare("lead", kLeadSql);
  conn_.prepare("depose", kDeposeSql);
  conn_.prepare("rescue_lost", kRescueLostSql);
  conn_.prepare("forget_nodes", kForgetNodesSql);
  conn_.prepare("prune_finished", kPruneFinishedSql);
  conn_.prepare("prune_old_secrets", kPruneOldSecretsSql);
  conn_.prepare("register_node", kRegisterNodeSql);
  conn_.prepare("heartbeat", kHeartbeatSql);
  conn_.prepare("remove_node", kRemoveNodeSql);
  conn_.prepare("open_breaker", kOpenBreakerSql);
  conn_.prepare("claim_probes", kClaimProbesSql);
  conn_.prepare("close_breaker", kCloseBreakerSql);
  conn_.prepare("reopen_breaker", kReopenBreakerSql);
  conn_.prepare("expire_probes", kExpireProbesSql);
  conn_.prepare("reconcile_parked", kReconcileParkedSql);
  conn_.prepare("not_closed_breakers", kNotClosedBreakersSql);
  conn_.prepare("sample_jobs", kSampleJobsSql);
  conn_.prepare("sample_breakers", kSampleBreakersSql);
  conn_.prepare("sample_lag", kSampleLagSql);
  conn_.prepare("park_behind_open", kParkBehindOpenSql);
  conn_.prepare("list_breakers", kListBreakersSql);
  conn_.prepare("reset_breaker", kResetBreakerSql);
  conn_.prepare("pause_channel", kPauseChannelSql);
  conn_.prepare("resume_channel", kResumeChannelSql);
  conn_.prepare("set_tenant_tier", kSetTenantTierSql);
  conn_.prepare("queue_status", kQueueStatusSql);
  conn_.prepare("node_status", kNodeStatusSql);
  conn_.prepare("list_jobs", kListJobsSql);
  conn_.prepare("replay", kReplaySql);
  conn_.prepare("cancel", kCancelSql);
  conn_.prepare("find_job", kFindJobSql);
  conn_.prepare("add_channel", kAddChannelSql);
  conn_.prepare("show_channel", kShowChannelSql);
  conn_.prepare("rotate_lock", kRotateLockSql);
  conn_.prepare("rotate_drop", kRotateDropSql);
  conn_.prepare("rotate_retire", kRotateRetireSql);
  conn_.prepare("rotate_set", kRotateSetSql);
  conn_.prepare("disable_channel", kDisableChannelSql);
  conn_.prepare("enable_channel", kEnableChannelSql);
  conn_.prepare("add_tenant", kAddTenantSql);
  conn_.prepare("show_tenant", kShowTenantSql);
}

std::vector<ClaimedJob> JobStore::Claim(const std::string& queue, int limit,
                                        const std::string& node, const ClaimLimits& limits,
                                        int* parked) {
  std::vector<int64_t> channels, channel_counts, tenants, tenant_counts;
  for (const auto& [id, n] : limits.channels_in_flight) {
    channels.push_back(id);
    channel_counts.push_back(n);
  }
  for (const auto& [id, n] : limits.tenants_in_flight) {
    tenants.push_back(id);
    tenant_counts.push_back(n);
  }
  // The claim's custom plans cost more to make (5–10 ms, for its many CTEs) than to run, and
  // its generic plan is as good for every parameter: the LATERALs fix its shape. Plan once.
  // The setting is the session's, made once per connection: as SET LOCAL it cost a
  // transaction block, BEGIN, SET, claim and COMMIT, four round trips for every claim, where
  // the claim alone, one statement, is atomic in autocommit. Every later statement on a
  // claiming connection (the runner's: probes, demotion, hand-back) is planned generically
  // too; each of those is shaped by its SQL, not by its parameters.
  if (!generic_plans_) {
    pqxx::nontransaction(conn_, "generic_plans").exec0("SET plan_cache_mode = force_generic_plan");
    generic_plans_ = true;
  }
  pqxx::nontransaction tx(conn_, "claim");
  pqxx::result rows = tx.exec_prepared(
      "claim", queue, limit, node, PgArray(channels), PgArray(channel_counts), PgArray(tenants),
      PgArray(tenant_counts), limits.channel_cap, limits.tenant_cap, PgArray(limits.refill));
  std::vector<ClaimedJob> jobs;
  jobs.reserve(rows.size());
  int parked_here = 0;
  for (const auto& row : rows) {
    if (row[8].as<bool>()) {
      ++parked_here;
      continue;
    }
    jobs.push_back(ClaimedFromRow(row, 10));
    jobs.back().wait_s = row[9].as<double>();
  }
  if (parked) *parked = parked_here;
  return jobs;
}

std::vector<ClaimedJob> JobStore::Claim(const std::string& queue, int limit,
                                        const std::string& node, int* parked) {
  return Claim(queue, limit, node, ClaimLimits{}, parked);
}

int JobStore::DemoteChannel(int64_t channel) {
  pqxx::work tx(conn_, "demote_channel");
  int demoted = Written(tx.exec_prepared("demote_channel", channel));
  tx.commit();
  return demoted;
}

int JobStore::SnoozeChannel(int64_t channel, int64_t delay_ms) {
  pqxx::work tx(conn_, "snooze_channel");
  int snoozed = Written(tx.exec_prepared("snooze_channel", channel, delay_ms));
  tx.commit();
  return snoozed;
}

GoneOutcome JobStore::DisableGone(const GoneAnswer& answer, const std::string& node) {
  pqxx::work tx(conn_, "disable_gone");
  pqxx::result rows = tx.exec_prepared("disable_gone", answer.channel, answer.job, answer.attempt,
                                       node, answer.error, answer.duration_ms);
  tx.commit();
  if (rows.empty()) return {};
  return {rows[0][0].as<bool>(), rows[0][1].as<int64_t>()};
}

int JobStore::DemoteTenant(int64_t tenant) {
  pqxx::work tx(conn_, "demote_tenant");
  int demoted = Written(tx.exec_prepared("demote_tenant", tenant));
  tx.commit();
  return demoted;
}

int JobStore::Record(const std::vector<AttemptResult>& results, const std::string& node) {
  nlohmann::json batch = nlohmann::json::array();
  for (const auto& r : results) {
    batch.push_back({{"id", r.id},
                     {"attempt", r.attempt},
                     {"delivered", r.delivered},
                     {"status", r.status},
                     {"error", r.error},
                     {"duration_ms", r.duration_ms},
                     {"retry_delay_ms", r.retry_delay_ms},
                     {"permanent", r.permanent}});
  }
  pqxx::work tx(conn_, "record");
  int written = Written(tx.exec_prepared("record", batch.dump(), node));
  tx.commit();
  return written;
}

int JobStore::HandBack(const std::vector<OwnedJob>& jobs, const std::string& node) {
  nlohmann::json batch = nlohmann::json::array();
  for (const auto& j : jobs) batch.push_back({{"id", j.id}, {"attempt", j.attempt}});
  pqxx::work tx(conn_, "hand_back");
  int written = Written(tx.exec_prepared("hand_back", batch.dump(), node));
  tx.commit();
  return written;
}

void JobStore::RegisterTiers(const std::vector<std::string>& tiers) {
  pqxx::work tx(conn_, "register_tiers");
  tx.exec_prepared("register_tiers", nlohmann::json(tiers).dump());
  tx.commit();
}

void JobStore::RegisterNode(const std::string& node, const std::string& host, int pid,
                            const std::string& version, const std::vector<std::string>& tiers,
                            int64_t lease_ms) {
  pqxx::work tx(conn_, "register_node");
  tx.exec_prepared("register_node", node, host, pid, version, nlohmann::json(tiers).dump(),
                   lease_ms);
  tx.commit();
}

void JobStore::Heartbeat(const std::string& node, int64_t lease_ms) {
  pqxx::work tx(conn_, "heartbeat");
  tx.exec_prepared("heartbeat", node, lease_ms);
  tx.commit();
}

void JobStore::RemoveNode(const std::string& node) {
  pqxx::work tx(conn_, "remove_node");
  tx.exec_prepared("remove_node", node);
  tx.commit();
}

bool JobStore::TryLead(const std::string& node) {
  pqxx::nontransaction tx(conn_, "lead");
  return tx.exec_prepared1("lead", node)[0].as<bool>();
}

int JobStore::DeposeLostLeader() {
  pqxx::nontransaction tx(conn_, "depose");
  return tx.exec_prepared1("depose")[0].as<int>();
}

Rescue JobStore::RescueLost(const std::string& also) {
  pqxx::work tx(conn_, "rescue_lost");
  pqxx::row row = tx.exec_prepared1("rescue_lost", also);
  tx.commit();
  return {row[0].as<int64_t>(), row[1].as<int64_t>(), row[2].as<std::string>()};
}

int JobStore::ForgetNodes(int64_t after_ms) {
  pqxx::work tx(conn_, "forget_nodes");
  int forgotten = Written(tx.exec_prepared("forget_nodes", after_ms));
  tx.commit();
  return forgotten;
}

int JobStore::PruneOldSecrets() {
  pqxx::work tx(conn_, "prune_old_secrets");
  pqxx::row row = tx.exec_prepared1("prune_old_secrets");
  tx.commit();
  return row[0].as<int>();
}

int JobStore::PruneFinished(int64_t retention_ms, int batch) {
  pqxx::work tx(conn_, "prune_finished");
  int pruned = Written(tx.exec_prepared("prune_finished", retention_ms, batch));
  tx.commit();
  return pruned;
}

BreakerTransition JobStore::OpenBreaker(int64_t channel, int64_t cooldown_ms,
                                           const std::string& reason) {
  pqxx::work tx(conn_, "open_breaker");
  pqxx::row row = tx.exec_prepared1("open_breaker", channel, cooldown_ms, reason);
  tx.commit();
  return TransitionFromRow(row);
}

std::vector<ClaimedJob> JobStore::ClaimProbes(const std::string& queue, int limit,
                                              const std::string& node, int64_t probe_window_ms) {
  pqxx::work tx(conn_, "claim_probes");
  pqxx::result rows = tx.exec_prepared("claim_probes", queue, limit, node, probe_window_ms);
  tx.commit();
  std::vector<ClaimedJob> jobs;
  for (const auto& row : rows) {
    jobs.push_back(ClaimedFromRow(row, 8));
    jobs.back().probe = true;
  }
  return jobs;
}

BreakerTransition JobStore::CloseBreaker(int64_t channel, int64_t probe_job) {
  pqxx::work tx(conn_, "close_breaker");
  pqxx::row row = tx.exec_prepared1("close_breaker", channel, probe_job);
  tx.commit();
  return TransitionFromRow(row);
}

BreakerTransition JobStore::ReopenBreaker(int64_t channel, int64_t probe_job,
                                             int64_t cooldown_ms, int64_t cooldown_max_ms,
                                             const std::string& reason) {
  pqxx::work tx(conn_, "reopen_breaker");
  pqxx::row row =
      tx.exec_prepared1("reopen_breaker", channel, probe_job, cooldown_ms, cooldown_max_ms, reason);
  tx.commit();
  return TransitionFromRow(row);
}

int JobStore::ExpireProbes(const std::string& queue, int64_t cooldown_ms, int64_t cooldown_max_ms) {
  pqxx::work tx(conn_, "expire_probes");
  pqxx::row row = tx.exec_prepared1("expire_probes", queue, cooldown_ms, cooldown_max_ms);
  tx.commit();
  return row[0].as<int>();
}

std::pair<int64_t, int64_t> JobStore::ReconcileParked() {
  pqxx::work tx(conn_, "reconcile_parked");
  pqxx::row row = tx.exec_prepared1("reconcile_parked");
  tx.commit();
  return {row[0].as<int64_t>(), row[1].as<int64_t>()};
}

std::pair<int64_t, int64_t> JobStore::ParkBehindOpenBreakers() {
  pqxx::work tx(conn_, "park_behind_open");
  pqxx::row row = tx.exec_prepared1("park_behind_open");
  tx.commit();
  return {row[0].as<int64_t>(), row[1].as<int64_t>()};
}

std::vector<int64_t> JobStore::NotClosedBreakers() {
  pqxx::work tx(conn_, "not_closed_breakers");
  pqxx::result rows = tx.exec_prepared("not_closed_breakers");
  tx.commit();
  std::vector<int64_t> channels;
  for (const auto& row : rows) channels.push_back(row[0].as<int64_t>());
  return channels;
}

FleetCounts JobStore::SampleFleet() {
  // One read-only transaction: the three samples see one snapshot.
  pqxx::read_transaction tx(conn_, "sample_fleet");
  FleetCounts counts;
  for (const auto& row : tx.exec_prepared("sample_jobs")) {
    counts.jobs.push_back(
        {row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<int64_t>()});
  }
  for (const auto& row : tx.exec_prepared("sample_breakers")) {
    counts.breakers.push_back(
        {row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<int64_t>()});
  }
  for (const auto& row : tx.exec_prepared("sample_lag")) {
    counts.lag_s.emplace_back(row[0].as<std::string>(), row[1].as<double>());
  }
  tx.commit();
  return counts;
}

std::vector<BreakerRow> JobStore::ListBreakers() {
  pqxx::work tx(conn_, "list_breakers");
  pqxx::result rows = tx.exec_prepared("list_breakers");
  tx.commit();
  std::vector<BreakerRow> list;
  for (const auto& r : rows) {
    list.push_back({r[0].as<int64_t>(), r[1].as<std::string>(), r[2].as<std::string>(),
                    r[3].as<std::string>(), r[4].as<bool>(), r[5].as<std::string>(),
                    r[6].as<double>(), r[7].as<int>(), r[8].as<std::string>(), r[9].as<double>(),
                    r[10].as<int64_t>(), r[11].as<int64_t>()});
  }
  return list;
}

namespace {

std::optional<ChannelChange> RunChannelChange(pqxx::connection_base& conn,
                                                        const char* statement, int64_t channel,
                                                        bool pause_words) {
  pqxx::work tx(conn, statement);
  pqxx::result rows = tx.exec_prepared(statement, channel);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  std::string before =
      pause_words ? (rows[0][0].as<bool>() ? "paused" : "running") : rows[0][0].as<std::string>();
  return ChannelChange{before, rows[0][1].as<int64_t>()};
}

}  // namespace

std::optional<ChannelChange> JobStore::ResetBreaker(int64_t channel) {
  return RunChannelChange(conn_, "reset_breaker", channel, false);
}

std::optional<ChannelChange> JobStore::PauseChannel(int64_t channel) {
  return RunChannelChange(conn_, "pause_channel", channel, true);
}

std::optional<ChannelChange> JobStore::ResumeChannel(int64_t channel) {
  return RunChannelChange(conn_, "resume_channel", channel, true);
}

std::optional<TierMove> JobStore::SetTenantTier(const std::string& tenant,
                                                          const std::string& tier) {
  pqxx::work tx(conn_, "set_tenant_tier");
  pqxx::result rows = tx.exec_prepared("set_tenant_tier", tenant, tier);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return TierMove{rows[0][0].as<std::string>(), rows[0][1].as<std::string>(),
                  rows[0][2].as<int64_t>(), rows[0][3].as<int64_t>()};
}

// ---- Operators: the admin CLI ----------------------------------------------------------------

std::vector<QueueStatus> JobStore::QueueStatuses() {
  pqxx::work tx(conn_, "queue_status");
  pqxx::result rows = tx.exec_prepared("queue_status");
  tx.commit();
  std::vector<QueueStatus> list;
  for (const auto& r : rows) {
    list.push_back({r[0].as<std::string>(), r[1].as<int64_t>(), r[2].as<int64_t>(),
                    r[3].as<int64_t>(), r[4].as<int64_t>(), r[5].as<double>()});
  }
  return list;
}

std::vector<NodeStatus> JobStore::NodeStatuses() {
  pqxx::work tx(conn_, "node_status");
  pqxx::result rows = tx.exec_prepared("node_status");
  tx.commit();
  std::vector<NodeStatus> list;
  for (const auto& r : rows) {
    list.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(),
                    r[3].as<std::string>(), r[4].as<int>(), r[5].as<double>(), r[6].as<double>(),
                    r[7].as<int64_t>()});
  }
  return list;
}

std::vector<JobRow> JobStore::ListJobs(const JobFilter& filter) {
  pqxx::work tx(conn_, "list_jobs");
  // A filter that matches few rows of a big table walks far back through the primary key:
  // an operator gets an error after 10 s rather than a query that runs on for minutes.
  tx.exec0("SET LOCAL statement_timeout = '10s'");
  pqxx::result rows =
      tx.exec_prepared("list_jobs", filter.channel, filter.tenant, filter.state, filter.limit);
  tx.commit();
  std::vector<JobRow> list;
  for (const auto& r : rows) {
    list.push_back({r[0].as<int64_t>(), r[1].as<std::string>(), r[2].as<std::string>(),
                    r[3].as<std::string>(), r[4].as<int64_t>(), r[5].as<int>(), r[6].as<int>(),
                    r[7].as<int>(), r[8].as<std::string>(), r[9].as<std::string>(),
                    r[10].as<std::string>(), r[11].as<int64_t>(), r[12].as<std::string>()});
  }
  return list;
}

BulkChange JobStore::Replay(const JobSelector& selector) {
  pqxx::work tx(conn_, "replay");
  pqxx::row r = tx.exec_prepared1("replay", selector.id, selector.channel, selector.tenant,
                                  selector.since_at, selector.since_age_s, selector.until_at,
                                  selector.until_age_s, selector.limit);
  tx.commit();
  return {r[0].as<int64_t>(), r[1].as<int64_t>(), r[2].as<int64_t>(), r[3].as<bool>()};
}

BulkChange JobStore::Cancel(const JobSelector& selector) {
  pqxx::work tx(conn_, "cancel");
  pqxx::row r =
      tx.exec_prepared1("cancel", selector.id, selector.channel, selector.tenant, selector.limit);
  tx.commit();
  return {r[0].as<int64_t>(), 0, 0, r[1].as<bool>()};
}

std::optional<JobState> JobStore::FindJob(int64_t id) {
  pqxx::work tx(conn_, "find_job");
  pqxx::result rows = tx.exec_prepared("find_job", id);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return JobState{rows[0][0].as<std::string>(), rows[0][1].as<std::string>(), rows[0][2].as<int>()};
}

std::optional<NewChannel> JobStore::AddChannel(const std::string& tenant,
                                                         const std::string& url) {
  pqxx::work tx(conn_, "add_channel");
  pqxx::result rows = tx.exec_prepared("add_channel", tenant, url);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return NewChannel{rows[0][0].as<int64_t>(), rows[0][1].as<std::string>(),
                    rows[0][2].as<std::string>(), rows[0][3].as<std::string>()};
}

std::optional<ChannelInfo> JobStore::ShowChannel(int64_t channel) {
  pqxx::work tx(conn_, "show_channel");
  pqxx::result rows = tx.exec_prepared("show_channel", channel);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  const pqxx::row& r = rows[0];
  ChannelInfo info;
  info.id = r[0].as<int64_t>();
  info.tenant_id = r[1].as<int64_t>();
  info.tenant = r[2].as<std::string>();
  info.tier = r[3].as<std::string>();
  info.url = r[4].as<std::string>();
  info.created_at = r[5].as<std::string>();
  info.enabled = r[6].as<bool>();
  info.paused = r[7].as<bool>();
  info.disabled_reason = r[8].as<std::string>();
  info.breaker_state = r[9].as<std::string>();
  info.breaker_reason = r[10].as<std::string>();
  info.breaker_trips = r[11].as<int>();
  info.available = r[12].as<int64_t>();
  info.scheduled = r[13].as<int64_t>();
  info.executing = r[14].as<int64_t>();
  info.parked = r[15].as<int64_t>();
  info.old_secrets = r[16].as<int64_t>();
  info.old_secrets_until = r[17].as<std::string>();
  return info;
}

SecretRotation JobStore::RotateSecret(int64_t channel, const std::string& secret,
                                                int64_t keep_s) {
  SecretRotation rotation;
  pqxx::work tx(conn_, "rotate_secret");
  pqxx::result lock = tx.exec_prepared("rotate_lock", channel, secret);
  if (lock.empty()) {
    rotation.outcome = SecretRotation::kNoSuchChannel;
    return rotation;
  }
  if (lock[0][0].as<bool>()) {
    rotation.outcome = SecretRotation::kSameSecret;
    return rotation;
  }
  tx.exec_prepared("rotate_drop", channel, keep_s, secret);
  if (keep_s > 0) tx.exec_prepared("rotate_retire", channel, keep_s);
  pqxx::row row = tx.exec_prepared1("rotate_set", channel, secret);
  tx.commit();
  rotation.outcome = SecretRotation::kRotated;
  rotation.secret = row[0].as<std::string>();
  rotation.old_secrets = row[1].as<int64_t>();
  rotation.old_secrets_until = row[2].as<std::string>();
  return rotation;
}

std::optional<ChannelChange> JobStore::DisableChannel(int64_t channel,
                                                                const std::string& reason) {
  pqxx::work tx(conn_, "disable_channel");
  pqxx::result rows = tx.exec_prepared("disable_channel", channel, reason);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return ChannelChange{rows[0][0].as<bool>() ? "enabled" : "disabled", rows[0][1].as<int64_t>()};
}

std::optional<ChannelChange> JobStore::EnableChannel(int64_t channel) {
  pqxx::work tx(conn_, "enable_channel");
  pqxx::result rows = tx.exec_prepared("enable_channel", channel);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return ChannelChange{rows[0][0].as<bool>() ? "enabled" : "disabled", rows[0][1].as<int64_t>()};
}

int64_t JobStore::AddTenant(const std::string& name, const std::string& tier) {
  pqxx::work tx(conn_, "add_tenant");
  int64_t id = tx.exec_prepared1("add_tenant", name, tier)[0].as<int64_t>();
  tx.commit();
  return id;
}

std::optional<TenantInfo> JobStore::ShowTenant(const std::string& tenant) {
  pqxx::work tx(conn_, "show_tenant");
  pqxx::result rows = tx.exec_prepared("show_tenant", tenant);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  const pqxx::row& r = rows[0];
  return TenantInfo{r[0].as<int64_t>(),     r[1].as<std::string>(), r[2].as<std::string>(),
                    r[3].as<std::string>(), r[4].as<int64_t>(),     r[5].as<int64_t>(),
                    r[6].as<int64_t>(),     r[7].as<int64_t>(),     r[8].as<int64_t>()};
}

}  // namespace bulkhead
