// ResultRecorder: where a CompletionWriter's batches go — the seam between the writer's engine
// logic (batching, flush, retry, halving to find a poisoned result) and the database.
//
// The node's is StoreResultRecorder: CompletionStore::Record on a StoreConnection of its own
// (named "record" in pg_stat_activity), which connects on first use and is dropped by Reset().
// A test of the writer's logic passes one that keeps its batches in memory
// (tests/harness/memory_result_recorder.h); every statement keeps its tests against real
// PostgreSQL (completion_writer_test, the store's tests), which this seam does not replace.
//
// Failures: Record() throws what CompletionStore::Record throws — pqxx exceptions and
// nlohmann::json::exception — and the writer tells a failure of the data from one of the
// database by the exception alone (store_failure.h). An implementation that fails on purpose
// must throw what the real one would (pqxx::broken_connection, a pqxx::sql_error with its
// SQLSTATE), or the writer classifies it differently.
//
// Threads: owned by its CompletionWriter and used only by the writer thread; an implementation
// whose state a test reads from another thread guards it itself.
#pragma once

#include <string>
#include <vector>

#include "completion_store.h"
#include "store_connection.h"
#include "store_types.h"

namespace bulkhead {

class ResultRecorder {
 public:
  virtual ~ResultRecorder() = default;

  // Writes `results` as one statement for the claims `node` still holds (CompletionStore::
  // Record). Returns the rows written. Throws (above).
  virtual int Record(const std::vector<AttemptResult>& results, const std::string& node) = 0;

  // Drops the connection after a failed Record(); the next Record() reconnects.
  virtual void Reset() = 0;
};

// The node's ResultRecorder: CompletionStore on a connection of its own.
class StoreResultRecorder : public ResultRecorder {
 public:
  // `database`: a libpq connection string. Connects on the first Record(), not here.
  // `pooling`: kTransaction when `database` is a pooler in transaction mode.
  explicit StoreResultRecorder(std::string database, Pooling pooling = Pooling::kSession);

  int Record(const std::vector<AttemptResult>& results, const std::string& node) override;
  void Reset() override;

 private:
  StoreConnection<CompletionStore> store_;
};

}  // namespace bulkhead
