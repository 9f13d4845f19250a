// AdminJobsStore: what the operators' verbs about jobs and the fleet's state run — bulkhead
// status (queues and nodes), jobs, replay and cancel. Its SQL is worker/store/admin_jobs_store.sql;
// the store prepares only those statements.
//
// Used by one thread, the CLI's, on a connection of its own (cli::WithStore). Database errors
// throw pqxx exceptions, which the verb prints as one line. Construction throws
// std::logic_error when the build embedded no statement of a name it needs (named_queries.h).
#pragma once

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <span>
#include <string_view>
#include <vector>

#include "store_types.h"

namespace bulkhead {

class AdminJobsStore {
 public:
  // Every statement of admin_jobs_store.sql, listed by the build from it (named_queries.cmake); the
  // constructor prepares them.
  static const std::span<const std::string_view> kStatements;

  // Prepares its statements on `conn`, which must outlive the store.
  explicit AdminJobsStore(pqxx::connection_base& conn);

  // `bulkhead status`: every queue (tier) and every registered node.
  std::vector<QueueStatus> QueueStatuses();
  std::vector<NodeStatus> NodeStatuses();

  // The newest jobs matching `filter`, newest first, at most filter.limit.
  std::vector<JobRow> ListJobs(const JobFilter& filter);

  // Discarded jobs back to the queue with a fresh attempt budget (attempt 0), oldest discarded
  // first, in the queue of the tenant's tier now; parked if the channel's breaker is not closed
  // or it is paused. Wakes the nodes of the queues that got available jobs.
  BulkChange Replay(const JobSelector& selector);
  // Waiting jobs (available or parked) to cancelled. Jobs in flight are not touched.
  BulkChange Cancel(const JobSelector& selector);
  // The state of one job and its node, for the message when `cancel --id` changed nothing.
  // nullopt: no such job.
  std::optional<JobState> FindJob(int64_t id);

 private:
  pqxx::connection_base& conn_;
};

}  // namespace bulkhead
