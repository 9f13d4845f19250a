// BreakerLedger: the fleet's breakers as a BreakerKeeper moves and reads them — the seam between
// the keeper's engine logic (its queue of requests, the timers taking turns with it, retries
// after a failure, halving a batch after a statement timeout, quarantining a poisoned request)
// and the database.
//
// The node's is StoreBreakerLedger: BreakerStore on a StoreConnection of its own (named
// "breaker" in pg_stat_activity), which connects on first use and is dropped by Reset(). A test
// of the keeper's logic passes one that keeps the breakers in memory
// (tests/harness/memory_breaker_ledger.h); every statement keeps its tests against real
// PostgreSQL (breaker_store_test, breaker_keeper_test), which this seam does not replace.
//
// Each method is BreakerStore's of the same name (breaker_store.h says what it does) and throws
// what it throws: pqxx exceptions, which the keeper classifies by the exception alone
// (store_failure.h). An implementation that fails on purpose must throw what the real one would
// (pqxx::broken_connection, a pqxx::sql_error with its SQLSTATE: 57014 for a statement
// timeout, 22021 for a text PostgreSQL cannot hold).
//
// Threads: owned by its BreakerKeeper and used only by the keeper's thread; an implementation
// whose state a test reads from another thread guards it itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "breaker_store.h"
#include "store_connection.h"
#include "store_types.h"

namespace bulkhead {

class BreakerLedger {
 public:
  virtual ~BreakerLedger() = default;

  virtual BreakerTransition OpenBreaker(int64_t channel, int64_t cooldown_ms,
                                        const std::string& reason, int64_t batch) = 0;
  virtual BreakerTransition CloseBreaker(int64_t channel, int64_t probe_job, int64_t batch) = 0;
  virtual BreakerTransition ReopenBreaker(int64_t channel, int64_t probe_job, int64_t cooldown_ms,
                                          int64_t cooldown_max_ms, const std::string& reason,
                                          int64_t batch) = 0;
  virtual int64_t ParkBacklog(int64_t channel, int64_t batch) = 0;
  virtual int64_t UnparkBacklog(int64_t channel, int64_t batch) = 0;
  virtual int ExpireProbes(const std::string& queue, int64_t cooldown_ms,
                           int64_t cooldown_max_ms) = 0;
  virtual std::vector<int64_t> NotClosedBreakers() = 0;

  // Drops the connection after a failed call; the next call reconnects.
  virtual void Reset() = 0;
};

// The node's BreakerLedger: BreakerStore on a connection of its own.
class StoreBreakerLedger : public BreakerLedger {
 public:
  // `database`: a libpq connection string. Connects on the first call, not here.
  // `pooling`: kTransaction when `database` is a pooler in transaction mode.
  explicit StoreBreakerLedger(std::string database, Pooling pooling = Pooling::kSession);

  BreakerTransition OpenBreaker(int64_t channel, int64_t cooldown_ms, const std::string& reason,
                                int64_t batch) override;
  BreakerTransition CloseBreaker(int64_t channel, int64_t probe_job, int64_t batch) override;
  BreakerTransition ReopenBreaker(int64_t channel, int64_t probe_job, int64_t cooldown_ms,
                                  int64_t cooldown_max_ms, const std::string& reason,
                                  int64_t batch) override;
  int64_t ParkBacklog(int64_t channel, int64_t batch) override;
  int64_t UnparkBacklog(int64_t channel, int64_t batch) override;
  int ExpireProbes(const std::string& queue, int64_t cooldown_ms, int64_t cooldown_max_ms) override;
  std::vector<int64_t> NotClosedBreakers() override;
  void Reset() override;

 private:
  StoreConnection<BreakerStore> store_;
};

}  // namespace bulkhead
