// StoreConnection: a JobStore on a connection of its own that is opened on first use and
// dropped after any error, so that the next use reconnects. It is how every thread of a node
// survives a database restart or failover: catch, Reset(), back off, try again.
//
// Owned and used by one thread (see each owner's header); moving ownership to another thread
// after the first has stopped is fine.
#pragma once

#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "job_store.h"

namespace bulkhead {

class StoreConnection {
 public:
  explicit StoreConnection(std::string database) : database_(std::move(database)) {}

  // The store, connecting first if there is no connection. Throws pqxx errors.
  JobStore& Get() {
    if (!store_) {
      conn_ = std::make_unique<pqxx::connection>(database_);
      store_ = std::make_unique<JobStore>(*conn_);
    }
    return *store_;
  }

  // Drops the connection after an error; the next Get() reconnects.
  void Reset() {
    store_.reset();
    conn_.reset();
  }

 private:
  const std::string database_;
  std::unique_ptr<pqxx::connection> conn_;
  std::unique_ptr<JobStore> store_;  // refers to *conn_: declared after it, destroyed first
};

}  // namespace bulkhead
