#include "admin_jobs_store.h"

#include <string>

#include "named_queries.h"

namespace bulkhead {

AdminJobsStore::AdminJobsStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

std::vector<QueueStatus> AdminJobsStore::QueueStatuses() {
  pqxx::work tx(conn_, "queue_status");
  pqxx::result rows = tx.exec_prepared("queue_status");
  tx.commit();
  std::vector<QueueStatus> list;
  for (const auto& r : rows) {
    list.push_back({r["queue"].as<std::string>(), r["available"].as<int64_t>(),
                    r["scheduled"].as<int64_t>(), r["executing"].as<int64_t>(),
                    r["parked"].as<int64_t>(), r["lag_s"].as<double>()});
  }
  return list;
}

std::vector<NodeStatus> AdminJobsStore::NodeStatuses() {
  pqxx::work tx(conn_, "node_status");
  pqxx::result rows = tx.exec_prepared("node_status");
  tx.commit();
  std::vector<NodeStatus> list;
  for (const auto& r : rows) {
    list.push_back({r["name"].as<std::string>(), r["host"].as<std::string>(),
                    r["version"].as<std::string>(), r["tiers"].as<std::string>(),
                    r["pid"].as<int>(), r["heartbeat_age_s"].as<double>(),
                    r["lease_left_s"].as<double>(), r["executing"].as<int64_t>()});
  }
  return list;
}

std::vector<JobRow> AdminJobsStore::ListJobs(const JobFilter& filter) {
  pqxx::work tx(conn_, "list_jobs");
  // A filter that matches few rows of a big table walks far back through the primary key:
  // an operator gets an error after 10 s rather than a query that runs on for minutes.
  tx.exec0("SET LOCAL statement_timeout = '10s'");
  pqxx::result rows =
      tx.exec_prepared("list_jobs", filter.channel, filter.tenant, filter.state, filter.limit);
  tx.commit();
  std::vector<JobRow> list;
  for (const auto& r : rows) {
    list.push_back({r["id"].as<int64_t>(), r["queue"].as<std::string>(),
                    r["tenant"].as<std::string>(), r["state"].as<std::string>(),
                    r["channel"].as<int64_t>(), r["priority"].as<int>(), r["attempt"].as<int>(),
                    r["max_attempts"].as<int>(), r["created_at"].as<std::string>(),
                    r["scheduled_at"].as<std::string>(), r["finished_at"].as<std::string>(),
                    r["payload_bytes"].as<int64_t>(), r["last_error"].as<std::string>()});
  }
  return list;
}

BulkChange AdminJobsStore::Replay(const JobSelector& selector) {
  pqxx::work tx(conn_, "replay");
  pqxx::row r = tx.exec_prepared1("replay", selector.id, selector.channel, selector.tenant,
                                  selector.since_at, selector.since_age_s, selector.until_at,
                                  selector.until_age_s, selector.limit);
  tx.commit();
  return {r["jobs"].as<int64_t>(), r["available"].as<int64_t>(), r["parked"].as<int64_t>(),
          r["more"].as<bool>()};
}

BulkChange AdminJobsStore::Cancel(const JobSelector& selector) {
  pqxx::work tx(conn_, "cancel");
  pqxx::row r =
      tx.exec_prepared1("cancel", selector.id, selector.channel, selector.tenant, selector.limit);
  tx.commit();
  return {r["jobs"].as<int64_t>(), 0, 0, r["more"].as<bool>()};
}

std::optional<JobState> AdminJobsStore::FindJob(int64_t id) {
  pqxx::work tx(conn_, "find_job");
  pqxx::result rows = tx.exec_prepared("find_job", id);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  const pqxx::row& r = rows[0];
  return JobState{r["state"].as<std::string>(), r["node"].as<std::string>(),
                  r["attempt"].as<int>()};
}

}  // namespace bulkhead
