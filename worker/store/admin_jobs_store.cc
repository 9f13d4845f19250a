#include "admin_jobs_store.h"

#include <algorithm>
#include <string>
#include <utility>

#include "admin_jobs_store_statements.h"
#include "named_queries.h"

namespace bulkhead {

const std::span<const std::string_view> AdminJobsStore::kStatements =
    sql::admin_jobs_store::kStatements;

AdminJobsStore::AdminJobsStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

std::vector<QueueStatus> AdminJobsStore::QueueStatuses() {
  pqxx::work tx(conn_, "queue_status");
  std::vector<sql::QueueStatus::Row> rows = sql::QueueStatus::Run(tx);
  tx.commit();
  std::vector<QueueStatus> list;
  for (sql::QueueStatus::Row& r : rows) {
    constexpr int64_t kHeldCap = 100000;  // the statement counts to one more
    list.push_back({std::move(r.queue), r.available, r.scheduled, r.executing, r.parked, r.lag_s,
                    std::min(r.held, kHeldCap), r.held > kHeldCap, r.rate_limited_channels});
  }
  return list;
}

std::vector<NodeStatus> AdminJobsStore::NodeStatuses() {
  pqxx::work tx(conn_, "node_status");
  std::vector<sql::NodeStatus::Row> rows = sql::NodeStatus::Run(tx);
  tx.commit();
  std::vector<NodeStatus> list;
  for (sql::NodeStatus::Row& r : rows) {
    list.push_back({std::move(r.name), std::move(r.host), std::move(r.version), std::move(r.tiers),
                    r.pid, r.heartbeat_age_s, r.lease_left_s, r.executing});
  }
  return list;
}

std::vector<JobRow> AdminJobsStore::ListJobs(const JobFilter& filter) {
  pqxx::work tx(conn_, "list_jobs");
  // A filter that matches few rows of a big table walks far back through the primary key:
  // an operator gets an error after 10 s rather than a query that runs on for minutes.
  tx.exec0("SET LOCAL statement_timeout = '10s'");
  std::vector<sql::ListJobs::Row> rows = sql::ListJobs::Run(tx, {.channel = filter.channel,
                                                                 .tenant = filter.tenant,
                                                                 .state = filter.state,
                                                                 .limit = filter.limit});
  tx.commit();
  std::vector<JobRow> list;
  for (sql::ListJobs::Row& r : rows) {
    list.push_back({r.id, std::move(r.queue), std::move(r.tenant), std::move(r.state), r.channel,
                    r.priority, r.attempt, r.max_attempts, std::move(r.created_at),
                    std::move(r.scheduled_at), std::move(r.finished_at), r.payload_bytes,
                    std::move(r.last_error)});
  }
  return list;
}

BulkChange AdminJobsStore::Replay(const JobSelector& selector) {
  pqxx::work tx(conn_, "replay");
  const sql::Replay::Row r = sql::Replay::RunOne(tx, {.id = selector.id,
                                                      .channel = selector.channel,
                                                      .tenant = selector.tenant,
                                                      .since_at = selector.since_at,
                                                      .since_age_s = selector.since_age_s,
                                                      .until_at = selector.until_at,
                                                      .until_age_s = selector.until_age_s,
                                                      .limit = selector.limit});
  tx.commit();
  return {r.jobs, r.available, r.parked, r.more};
}

BulkChange AdminJobsStore::Cancel(const JobSelector& selector) {
  pqxx::work tx(conn_, "cancel");
  const sql::Cancel::Row r = sql::Cancel::RunOne(tx, {.id = selector.id,
                                                      .channel = selector.channel,
                                                      .tenant = selector.tenant,
                                                      .limit = selector.limit});
  tx.commit();
  return {r.jobs, 0, 0, r.more};
}

std::optional<JobState> AdminJobsStore::FindJob(int64_t id) {
  pqxx::work tx(conn_, "find_job");
  std::vector<sql::FindJob::Row> rows = sql::FindJob::Run(tx, {.id = id});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return JobState{std::move(rows[0].state), std::move(rows[0].node), rows[0].attempt};
}

}  // namespace bulkhead
