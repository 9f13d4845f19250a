// StoreConnection<Store>: a store (ClaimStore, CompletionStore, BreakerStore, FleetStore) on a
// connection of its own that is opened on first use (OpenConnection, database_connection.h: named
// after the node and `part` in pg_stat_activity) and dropped after any error, so that the
// next use reconnects. It is how every thread of a node survives a database restart or
// failover: catch, Reset(), back off, try again. Each thread holds the store it uses, so each
// connection prepares only that store's statements.
//
// Pooling::kTransaction opens it through a pooler in transaction mode (the node's
// `database_pool`): statements prepared once per server connection and settings made per
// transaction (pooled_connection.h).
//
// Owned and used by one thread (see each owner's header); moving ownership to another thread
// after the first has stopped is fine. The process-wide counts of errors and reconnects (for
// bulkhead_database_errors_total and bulkhead_reconnects_total) are atomics in
// StoreConnections, read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "database_connection.h"
#include "pooled_connection.h"

namespace bulkhead {

// How a StoreConnection reaches the server: a session of its own, or a pooler in transaction mode.
enum class Pooling { kSession, kTransaction };

// Since the process started, over every StoreConnection of any store: Reset() calls, and
// connections opened again after one. Safe for concurrent use.
class StoreConnections {
 public:
  static uint64_t errors() { return Counters().errors.load(std::memory_order_relaxed); }
  static uint64_t reconnects() { return Counters().reconnects.load(std::memory_order_relaxed); }

 protected:
  struct Totals {
    std::atomic<uint64_t> errors{0};
    std::atomic<uint64_t> reconnects{0};
  };
  static Totals& Counters() {
    static Totals totals;
    return totals;
  }
};

// `Store` is constructed from a pqxx::connection_base& that outlives it.
template <typename Store>
class StoreConnection : public StoreConnections {
 public:
  // `part` names the connection: "claim:default", "record", "breaker", "lease", "leader".
  StoreConnection(std::string database, std::string part, Pooling pooling = Pooling::kSession)
      : database_(std::move(database)), part_(std::move(part)), pooling_(pooling) {}

  // The store, connecting first if there is no connection. Throws pqxx errors.
  Store& Get() {
    if (!store_) {
      if (pooling_ == Pooling::kTransaction) {
        SessionSettings settings;
        conn_ = OpenPooledConnection(database_, part_, &settings);
        pooled_ = std::make_unique<PooledMark>(*conn_, std::move(settings));
      } else {
        conn_ = OpenConnection(database_, part_);
      }
      store_ = std::make_unique<Store>(*conn_);
      if (lost_) Counters().reconnects.fetch_add(1, std::memory_order_relaxed);
      lost_ = false;
    }
    return *store_;
  }

  // Closes the connection when it is not needed for a while (no error); the next Get() opens
  // a new one, which does not count as a reconnect.
  void Close() {
    store_.reset();
    pooled_.reset();
    conn_.reset();
  }

  // Drops the connection after an error; the next Get() reconnects.
  // Every caller calls it after a failed statement or connect, so it also counts the error.
  void Reset() {
    Counters().errors.fetch_add(1, std::memory_order_relaxed);
    lost_ = true;
    Close();
  }

 private:
  const std::string database_;
  const std::string part_;
  const Pooling pooling_;
  std::unique_ptr<pqxx::connection> conn_;
  std::unique_ptr<PooledMark> pooled_;  // marks *conn_ (kTransaction): destroyed before it
  std::unique_ptr<Store> store_;        // refers to *conn_: declared after it, destroyed first
  bool lost_ = false;                   // Reset() since the last connect: the next is a reconnect
};

}  // namespace bulkhead
