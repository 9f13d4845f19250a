// CompletionStore: what the completion writer runs — one statement that writes a whole batch
// of attempt results back (worker/store/completion_store.sql). The store prepares only it.
//
// One CompletionStore per connection, and both belong to the completion writer's thread. From
// the first Record on, the connection plans generically and from indexes only (index_plans.h).
// Database errors throw pqxx exceptions, and a text that is not UTF-8 throws
// nlohmann::json::exception while the batch is encoded; the writer tells a failure of the data
// from one of the database (store_failure.h): it sets the one offending result aside, or resets
// its StoreConnection and keeps the batch. Construction throws std::logic_error when the build
// embedded no statement of a name it needs (named_queries.h).
#pragma once

#include <pqxx/pqxx>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "store_types.h"

namespace bulkhead {

class CompletionStore {
 public:
  // Every statement of completion_store.sql, listed by the build from it (named_queries.cmake); the
  // constructor prepares them.
  static const std::span<const std::string_view> kStatements;

  // Prepares its statement on `conn`, which must outlive the store.
  explicit CompletionStore(pqxx::connection_base& conn);

  // Writes a batch of results for jobs `node` still owns at the given attempt: completes the
  // delivered, reschedules the failed, discards those out of attempts. Stale results (the job
  // was handed back, rescued or claimed again) change nothing. Returns the rows written.
  int Record(const std::vector<AttemptResult>& results, const std::string& node);

 private:
  pqxx::connection_base& conn_;
  // Whether the session plans from indexes yet (set by the first Record; see there).
  bool index_plans_ = false;
};

}  // namespace bulkhead
