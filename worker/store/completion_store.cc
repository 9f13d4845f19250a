#include "completion_store.h"

#include <nlohmann/json.hpp>

#include "completion_store_statements.h"
#include "named_queries.h"

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
  pqxx::work tx(conn_, "record");
  int written = static_cast<int>(sql::Record::Run(tx, {.results = batch.dump(), .node = node}));
  tx.commit();
  return written;
}

}  // namespace bulkhead
