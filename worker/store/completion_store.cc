#include "completion_store.h"

#include <nlohmann/json.hpp>

#include "completion_store_statements.h"
#include "index_plans.h"
#include "named_queries.h"
#include "pooled_connection.h"

namespace bulkhead {

const std::span<const std::string_view> CompletionStore::kStatements =
    sql::completion_store::kStatements;

CompletionStore::CompletionStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

int CompletionStore::Record(const std::vector<AttemptResult>& results, const std::string& node) {
  // Batches travel as one JSON parameter unpacked by jsonb_to_recordset(), so one round trip
  // finishes hundreds of jobs without building array literals by hand.
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
  // Planned once for the connection, from indexes (index_plans.h): under plan_cache_mode = auto
  // PostgreSQL kept planning this statement at every write once the statistics had seen the
  // node's executing rows, and a plan made while they called the table empty read it whole.
  if (!index_plans_) {
    PlanFromIndexes(conn_);
    index_plans_ = true;
  }
  // One statement is atomic on its own: autocommit, one round trip, where a transaction block
  // took three (BEGIN, the write, COMMIT). A pooled connection gets its block (Atomically).
  return Atomically(conn_, "record", [&](pqxx::transaction_base& tx) {
    return static_cast<int>(sql::Record::Run(tx, {.results = batch.dump(), .node = node}));
  });
}

}  // namespace bulkhead
