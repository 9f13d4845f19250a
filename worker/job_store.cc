#include "job_store.h"

#include <nlohmann/json.hpp>

namespace bulkhead {
namespace {

// claim: the heart of the queue.
//
// - One statement, one round trip: the CTE picks and locks, the UPDATE marks them executing
//   with attempt + 1, the node and the time, and RETURNING hands back what the request needs.
// - LIMIT is the runner's free slots, never more: a node holds no job it cannot start now, so
//   other nodes see the rest, and nothing waits in memory.
// - FOR UPDATE SKIP LOCKED: nodes claiming the same queue at once take disjoint rows instead of
//   queueing behind each other's locks.
// - One index range scan per priority (the LATERAL over 1, 2, 3) rather than one scan ordered
//   by (priority, scheduled_at, id): with `scheduled_at <= now()` as a range bound inside each
//   priority, the scan stops at the first job not yet due, so retries waiting for hours never
//   lengthen a claim. A single scan over the whole index would have to step over every future
//   job of priority 1 before it reached a due job of priority 2. The priorities run in array
//   order through a nested loop (LATERAL forces one) and the outer LIMIT stops it, so priority
//   2 is read only when priority 1 has fewer due jobs than the limit.
// - jobs_claim holds only `available` rows, so parked, executing and finished jobs are never
//   in the way however many there are.
// - The breaker is checked here, in the same statement, against the committed channel row:
//   a job picked for a channel whose breaker is not closed, or that is paused, is parked
//   instead of claimed (no attempt spent). That catches the one race parking in one statement
//   leaves open: an enqueue that read the breaker closed and committed just after the park.
// - RETURNING comes in the UPDATE's own row order; the final ORDER BY sends the batch's
//   requests in claim order too. Parked rows come back too, so the runner knows it took
//   `limit` rows and that the queue may hold more.
constexpr const char* kClaimSql = R"sql(
WITH picked AS (
  SELECT due.id
    FROM unnest('{1,2,3}'::smallint[]) AS p(priority)
   CROSS JOIN LATERAL (
         SELECT j.id
           FROM bulkhead.jobs j
          WHERE j.queue = $1 AND j.state = 'available'
            AND j.priority = p.priority AND j.scheduled_at <= now()
          ORDER BY j.scheduled_at, j.id
          LIMIT $2
            FOR UPDATE SKIP LOCKED) AS due
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
            ch.url, ch.secret, j.priority, j.scheduled_at, j.state
)
SELECT id, channel_id, tenant_id, attempt, max_attempts, payload, url, secret,
       state = 'parked' AS parked
  FROM claimed
 ORDER BY priority, scheduled_at, id
)sql";

// record: one statement for a whole batch of results.
//
// The WHERE is the fence: a node finishes a job only while it is still `executing`, claimed by
// this node, at this attempt. A result that arrives after a hand-back, a rescue or another
// claim matches nothing and changes nothing.
//
// Whether a failure retries or discards is decided here, from the row's own attempt and
// max_attempts, not from what the node remembers. The retry time is the database's now() plus
// the node's jittered delay, so clocks of different nodes never disagree about it. A failed
// attempt whose channel's breaker is no longer closed (or that was paused meanwhile) waits
// parked rather than available: attempts in flight when a breaker opens end as usual, and
// their jobs join the parked backlog without spending more of their budget. The attempt log
// keeps the newest 20 entries (jsonb - 0 drops the oldest).
constexpr const char* kRecordSql = R"sql(
UPDATE bulkhead.jobs AS j
   SET state = CASE WHEN r.delivered THEN 'completed'
                    WHEN j.attempt >= j.max_attempts THEN 'discarded'
                    WHEN ch.breaker_state <> 'closed' OR ch.paused THEN 'parked'
                    ELSE 'available' END,
       priority = CASE WHEN NOT r.delivered AND j.attempt < j.max_attempts
                            AND (ch.breaker_state <> 'closed' OR ch.paused) THEN 3
                       ELSE j.priority END,
       finished_at = CASE WHEN r.delivered OR j.attempt >= j.max_attempts THEN now() END,
       scheduled_at = CASE WHEN NOT r.delivered AND j.attempt < j.max_attempts
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
                                          retry_delay_ms bigint),
       bulkhead.channels AS ch
 WHERE j.id = r.id AND j.state = 'executing' AND j.attempted_by = $2 AND j.attempt = r.attempt
   AND ch.id = j.channel_id
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
            ch.url, ch.secret
)
SELECT claimed.*, (SELECT count(*) FROM probing) FROM claimed
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

// not_closed_breakers: the node's view of the fleet's breakers, refreshed every few seconds
// in case a NOTIFY was missed. Reads only channels_breaker_due's rows.
constexpr const char* kNotClosedBreakersSql = R"sql(
SELECT id FROM bulkhead.channels WHERE breaker_state <> 'closed'
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

template <typename T>
int Written(const T& result) {
  return static_cast<int>(result.affected_rows());
}

// A row of claim or claim_probes: id, channel_id, tenant_id, attempt, max_attempts, payload,
// url, secret.
ClaimedJob ClaimedFromRow(const pqxx::row& row) {
  return {row[0].as<int64_t>(),     row[1].as<int64_t>(),    row[2].as<int64_t>(),
          row[3].as<int>(),         row[4].as<int>(),        row[5].as<std::string>(),
          row[6].as<std::string>(), row[7].as<std::string>()};
}

// The first row of a transition statement: (rows transitioned, jobs moved, …).
JobStore::Transition TransitionFromRow(const pqxx::row& row) {
  return {row[0].as<int64_t>() > 0, row[1].as<int64_t>()};
}

}  // namespace

JobStore::JobStore(pqxx::connection_base& conn) : conn_(conn) {
  conn_.prepare("claim", kClaimSql);
  conn_.prepare("record", kRecordSql);
  conn_.prepare("hand_back", kHandBackSql);
  conn_.prepare("register_tiers", kRegisterTiersSql);
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
  conn_.prepare("list_breakers", kListBreakersSql);
  conn_.prepare("reset_breaker", kResetBreakerSql);
  conn_.prepare("pause_channel", kPauseChannelSql);
  conn_.prepare("resume_channel", kResumeChannelSql);
}

std::vector<ClaimedJob> JobStore::Claim(const std::string& queue, int limit,
                                        const std::string& node, int* parked) {
  pqxx::work tx(conn_, "claim");
  pqxx::result rows = tx.exec_prepared("claim", queue, limit, node);
  tx.commit();
  std::vector<ClaimedJob> jobs;
  jobs.reserve(rows.size());
  int parked_here = 0;
  for (const auto& row : rows) {
    if (row[8].as<bool>()) {
      ++parked_here;
      continue;
    }
    jobs.push_back(ClaimedFromRow(row));
  }
  if (parked) *parked = parked_here;
  return jobs;
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
                     {"retry_delay_ms", r.retry_delay_ms}});
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

JobStore::Transition JobStore::OpenBreaker(int64_t channel, int64_t cooldown_ms,
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
    jobs.push_back(ClaimedFromRow(row));
    jobs.back().probe = true;
  }
  return jobs;
}

JobStore::Transition JobStore::CloseBreaker(int64_t channel, int64_t probe_job) {
  pqxx::work tx(conn_, "close_breaker");
  pqxx::row row = tx.exec_prepared1("close_breaker", channel, probe_job);
  tx.commit();
  return TransitionFromRow(row);
}

JobStore::Transition JobStore::ReopenBreaker(int64_t channel, int64_t probe_job,
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

std::vector<int64_t> JobStore::NotClosedBreakers() {
  pqxx::work tx(conn_, "not_closed_breakers");
  pqxx::result rows = tx.exec_prepared("not_closed_breakers");
  tx.commit();
  std::vector<int64_t> channels;
  for (const auto& row : rows) channels.push_back(row[0].as<int64_t>());
  return channels;
}

std::vector<JobStore::BreakerRow> JobStore::ListBreakers() {
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

std::optional<JobStore::ChannelChange> RunChannelChange(pqxx::connection_base& conn,
                                                        const char* statement, int64_t channel,
                                                        bool pause_words) {
  pqxx::work tx(conn, statement);
  pqxx::result rows = tx.exec_prepared(statement, channel);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  std::string before =
      pause_words ? (rows[0][0].as<bool>() ? "paused" : "running") : rows[0][0].as<std::string>();
  return JobStore::ChannelChange{before, rows[0][1].as<int64_t>()};
}

}  // namespace

std::optional<JobStore::ChannelChange> JobStore::ResetBreaker(int64_t channel) {
  return RunChannelChange(conn_, "reset_breaker", channel, false);
}

std::optional<JobStore::ChannelChange> JobStore::PauseChannel(int64_t channel) {
  return RunChannelChange(conn_, "pause_channel", channel, true);
}

std::optional<JobStore::ChannelChange> JobStore::ResumeChannel(int64_t channel) {
  return RunChannelChange(conn_, "resume_channel", channel, true);
}

}  // namespace bulkhead
