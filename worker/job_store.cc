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
// - RETURNING comes in the UPDATE's own row order; the final ORDER BY sends the batch's
//   requests in claim order too.
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
     SET state = 'executing', attempt = j.attempt + 1, attempted_at = now(), attempted_by = $3
    FROM picked, bulkhead.channels AS ch
   WHERE j.id = picked.id AND ch.id = j.channel_id
  RETURNING j.id, j.channel_id, j.tenant_id, j.attempt, j.max_attempts, j.payload::text,
            ch.url, ch.secret, j.priority, j.scheduled_at
)
SELECT id, channel_id, tenant_id, attempt, max_attempts, payload, url, secret
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
// the node's jittered delay, so clocks of different nodes never disagree about it. The attempt
// log keeps the newest 20 entries (jsonb - 0 drops the oldest).
constexpr const char* kRecordSql = R"sql(
UPDATE bulkhead.jobs AS j
   SET state = CASE WHEN r.delivered THEN 'completed'
                    WHEN j.attempt >= j.max_attempts THEN 'discarded'
                    ELSE 'available' END,
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
                                          retry_delay_ms bigint)
 WHERE j.id = r.id AND j.state = 'executing' AND j.attempted_by = $2 AND j.attempt = r.attempt
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

template <typename T>
int Written(const T& result) {
  return static_cast<int>(result.affected_rows());
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
}

std::vector<ClaimedJob> JobStore::Claim(const std::string& queue, int limit,
                                        const std::string& node) {
  pqxx::work tx(conn_, "claim");
  pqxx::result rows = tx.exec_prepared("claim", queue, limit, node);
  tx.commit();
  std::vector<ClaimedJob> jobs;
  jobs.reserve(rows.size());
  for (const auto& row : rows) {
    jobs.push_back({row[0].as<int64_t>(), row[1].as<int64_t>(), row[2].as<int64_t>(),
                    row[3].as<int>(), row[4].as<int>(), row[5].as<std::string>(),
                    row[6].as<std::string>(), row[7].as<std::string>()});
  }
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

}  // namespace bulkhead
